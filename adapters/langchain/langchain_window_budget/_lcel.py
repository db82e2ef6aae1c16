"""The LCEL transformer: :class:`WindowBudgetRunnable` for ``prompt | condenser | model``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackManagerForChainRun, CallbackManagerForChainRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, BaseMessage
from langchain_core.prompt_values import ChatPromptValue, PromptValue
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from pydantic import ConfigDict, PrivateAttr

from langchain_window_budget._engine import LangChainCondenser
from langchain_window_budget._result import LangChainResult
from langchain_window_budget._sessions import as_message_list
from langchain_window_budget._window import OnSummarizerError
from window_budget.contract import BudgetPolicy
from window_budget.errors import ConfigError

__all__ = ["CONVERSATION_KEYS", "TransformerIO", "WindowBudgetRunnable", "config_conversation"]

CONVERSATION_KEYS = ("thread_id", "session_id", "conversation_id")
"""The ``configurable`` keys that name a conversation, the first present wins: LangGraph's
``thread_id``, ``RunnableWithMessageHistory``'s ``session_id``, and ``conversation_id``."""


def config_conversation(config: RunnableConfig | None) -> str | None:
    """The conversation a run belongs to, named by its config (None: not named there).

    The value (a str, an int or a UUID) of the first of :data:`CONVERSATION_KEYS` in
    ``config["configurable"]``, as a str; without one, the engine falls back on the first
    message's id.
    """
    configurable = (config or {}).get("configurable")
    if not isinstance(configurable, Mapping):
        return None
    for key in CONVERSATION_KEYS:
        value = configurable.get(key)
        if isinstance(value, str | int | UUID) and not isinstance(value, bool) and value != "":
            return str(value)
    return None


def _as_messages(value: object) -> tuple[Sequence[BaseMessage], bool]:
    if isinstance(value, PromptValue):
        return value.to_messages(), True
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return as_message_list(value), False
    raise TypeError(
        f"the window-budget transformer takes a list of messages or a chat prompt value, "
        f"not {type(value).__name__}; put it after a ChatPromptTemplate or pass messages"
    )


TransformerIO = list[AnyMessage] | ChatPromptValue
"""What the transformer takes and gives: a list of messages or a chat prompt value."""


def _as_size(value: Any) -> Any:
    """A size read back from JSON (lists) as the tuples ``trigger`` / ``keep`` take."""
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str):
        return (value[0], value[1])
    if isinstance(value, list):
        return [_as_size(item) for item in value]
    return value


class WindowBudgetRunnable(RunnableSerializable[TransformerIO, TransformerIO]):
    """A ``Runnable`` that condenses the messages flowing through it: ``prompt | this | model``.

    Takes a list of messages or a chat prompt value; returns the same object when the
    transcript is under budget, else ``[*system, digest, *kept]`` (a ``ChatPromptValue`` when
    it was given one). The digest is not stored anywhere: pair it with
    :class:`~langchain_window_budget.CondensingChatMessageHistory` to make it persistent.

    Because the result is not stored, each reply's ``usage_metadata`` measured a list other
    than the next input; the transformer therefore never anchors on it (it calls
    ``engine.ignore_usage()``) and counts every message itself.

    What it knows of a conversation between runs (its last conversion, the remembered
    digest, a background digest with ``precompact``) is kept under the name the run's config
    gives (``configurable`` ``thread_id``, else ``session_id``, else ``conversation_id``),
    else under the first message's id: pass one of those when messages carry no ids (a
    prompt template's do not), or conversations share one background slot.

    It is serializable the LangChain way (``dumps`` / ``loads`` from ``langchain_core.load``)
    when its parts are: the chat models must be serializable themselves and the counter a
    name (``None``, ``"tiktoken"``, ``"model"``); a callable counter makes ``to_json``
    report it not serializable, as LangChain does for any such object. Load it with
    ``loads(text, allowed_objects=[WindowBudgetRunnable, <your chat model class>],
    valid_namespaces=["langchain_window_budget"])``.
    """

    model: BaseChatModel | None = None
    """The guarded chat model; it writes the digests unless ``summarizer`` is given."""
    context_window: int | None = None
    """Tokens the model accepts (else its profile, else the table of models)."""
    policy: dict[str, Any] | None = None
    """The :class:`~window_budget.BudgetPolicy` as a dict of its fields (a policy object
    given to the constructor is stored so); None is the window-scaled default."""
    counter: Any = None
    """See :data:`CounterSpec`."""
    summarizer: Any = None
    """What writes the digests instead of ``model``: a chat model, a ``"provider:model"``
    string, a ``Runnable`` or a sync or async function (as the middleware takes it; anything
    else is refused with a ``ConfigError``). Only a chat model keeps the transformer
    serializable."""
    on_summarizer_error: OnSummarizerError | None = None
    """``"raise"`` to raise ``SummarizerError`` when the summary call fails."""
    trigger: Any = None
    """When to condense, in ``SummarizationMiddleware``'s forms (see ``sizes``)."""
    keep: Any = None
    """How much to keep verbatim, in ``SummarizationMiddleware``'s forms."""
    precompact: float | None = None
    """Ahead-of-time compaction on the async path (``ainvoke``, ``astream``): once a
    conversation's prompt passes this fraction of the usable window (below the trigger), the
    summary of the head the gate would fold is written in the background, and the run that
    crosses the trigger folds that head with the ready digest. Sets the policy's
    ``precompact_ratio`` (None keeps the policy's). ``invoke`` stays synchronous."""

    _engine: LangChainCondenser = PrivateAttr()

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def __init__(self, **kwargs: Any) -> None:
        """Build the transformer; keyword arguments as :func:`condense_messages` takes them.

        Raises:
            ConfigError: no window can be found, or a size or the policy is malformed.

        """
        policy = kwargs.get("policy")
        if isinstance(policy, BudgetPolicy):
            kwargs["policy"] = {f.name: getattr(policy, f.name) for f in fields(policy)}
        for name in ("trigger", "keep"):
            kwargs[name] = _as_size(kwargs.get(name))
        super().__init__(**kwargs)
        try:
            policy_obj = None if self.policy is None else BudgetPolicy(**self.policy)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"policy {self.policy!r} is not a BudgetPolicy: {exc}") from exc
        engine = LangChainCondenser(
            self.model,
            context_window=self.context_window,
            policy=policy_obj,
            counter=self.counter,
            summarizer=self.summarizer,
            remember_digests=True,
            on_summarizer_error=self.on_summarizer_error,
            trigger=self.trigger,
            keep=self.keep,
            precompact=self.precompact,
        )
        engine.ignore_usage()
        self._engine = engine

    @property
    def engine(self) -> LangChainCondenser:
        """The condenser doing the work (usage anchoring switched off)."""
        return self._engine

    @classmethod
    def is_lc_serializable(cls) -> bool:
        """True: the transformer is saved by its configuration."""
        return True

    @classmethod
    def get_lc_namespace(cls) -> list[str]:
        """``["langchain_window_budget", "condense"]``, the module it loads from."""
        return ["langchain_window_budget", "condense"]

    def to_json(self) -> Any:
        """LangChain's serialized form; "not implemented" when the counter is a callable."""
        if self.counter is not None and not isinstance(self.counter, str):
            return self.to_json_not_implemented()
        return super().to_json()

    @property
    def InputType(self) -> Any:
        """A list of messages or a chat prompt value."""
        return TransformerIO

    @property
    def OutputType(self) -> Any:
        """The same kinds as the input (the input object itself when under budget)."""
        return TransformerIO

    def _apply(
        self, value: Any, run_manager: CallbackManagerForChainRun, config: RunnableConfig
    ) -> Any:
        messages, was_prompt = _as_messages(value)
        result = self._engine.run(messages, conversation=config_conversation(config))
        return self._wrap(value, result, was_prompt)

    async def _aapply(
        self, value: Any, run_manager: AsyncCallbackManagerForChainRun, config: RunnableConfig
    ) -> Any:
        messages, was_prompt = _as_messages(value)
        result = await self._engine.arun(messages, conversation=config_conversation(config))
        return self._wrap(value, result, was_prompt)

    async def aclose(self) -> None:
        """Cancel the background digests still being written (``precompact``) and wait.

        One conversation's: ``engine.ahead.cancel(name)``, ``name`` being the config's
        ``thread_id`` / ``session_id`` / ``conversation_id`` (see :func:`config_conversation`).
        """
        if self._engine.ahead is not None:
            await self._engine.ahead.aclose()

    @staticmethod
    def _wrap(value: Any, result: LangChainResult, was_prompt: bool) -> Any:
        if not result.changed:
            return value
        out = list(result.messages)
        return ChatPromptValue(messages=out) if was_prompt else out

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Condense one transcript (the input object itself comes back when under budget)."""
        return self._call_with_config(self._apply, input, config, run_type="chain", **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """The async twin of :meth:`invoke`."""
        return await self._acall_with_config(
            self._aapply, input, config, run_type="chain", **kwargs
        )
