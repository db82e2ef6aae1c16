"""How a memory is saved and rebuilt: its JSON data, pickling and copies.

``to_dict`` writes the messages, the archive and the configuration as JSON data and names
what it cannot carry (the LLM, the stores), with the token by which ``from_dict`` finds
them again (:mod:`~llama_index.memory.window_budget.restore`). Pickling keeps the LLM
and the counter when they pickle; a deep copy is an independent memory over a copied store.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import logging
import pickle
import threading
from typing import TYPE_CHECKING, Any, Self

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms.llm import LLM
from llama_index.core.memory.types import DEFAULT_CHAT_STORE_KEY
from llama_index.core.storage.chat_store import BaseChatStore

from llama_index.memory.window_budget.building import DIGEST_ROLES, default_policy
from llama_index.memory.window_budget.conversation import ARCHIVE_SUFFIX, StoredConversation
from llama_index.memory.window_budget.counters import CounterSpec, serializable_counter
from llama_index.memory.window_budget.memory_store import (
    load_entries,
    reseal,
    saved_seal,
    snapshot_entries,
)
from llama_index.memory.window_budget.restore import (
    ON_CHAT_STORE,
    Runtime,
    llm_config,
    memory_store_name,
    restored,
    restoring,
    runtime_for,
)
from llama_index.memory.window_budget.stores import store_name
from window_budget.contract import BudgetPolicy, CondenseResult, TokenCounter
from window_budget.memory import MemoryStore
from window_budget.messages import loads
from window_budget.stores import ConditionalRewrite

__all__ = [
    "RUNTIME_ATTRS",
    "SERIAL_VERSION",
    "MemoryPersistence",
    "check_data",
    "drop_unpicklable",
    "saved_names",
]

logger = logging.getLogger(__name__)

SERIAL_VERSION = 4
"""Version of the data ``to_dict`` writes (1: before the LLM and stores were named; 2:
before the LLM's configuration was saved; 3: before the memory store was named)."""
RUNTIME_ATTRS = (
    "_compact_lock",
    "_aloop",
    "_alock",
    "_sync_condenser",
    "_async_condenser",
    "_ahead",
    "_stored",
    "_store_rewrite",
    "_runtime",
)
"""Per-process state rebuilt after pickling or copying; never part of the state itself."""


def saved_names(
    runtime: Runtime, llm: LLM | None, chat_store: BaseChatStore, archive: BaseChatStore | None
) -> dict[str, Any]:
    """The entries of ``to_dict`` that name what is not serialized, and the token."""
    meta = getattr(llm, "metadata", None)
    name = None if llm is None else str(getattr(meta, "model_name", None) or type(llm).__name__)
    return {
        "version": SERIAL_VERSION,
        "instance": runtime.token,
        "llm": name,
        "llm_config": llm_config(llm),
        "chat_store": store_name(chat_store),
        "archive_store": None if archive is None else store_name(archive),
    }


def check_data(data: object, class_name: str) -> tuple[int, str]:
    """``(context_window, digest_role)`` of data ``to_dict`` wrote; ``ValueError`` otherwise."""
    if not isinstance(data, dict) or data.get("class_name") not in (None, class_name):
        raise ValueError(f"not a {class_name}: expected the dict to_dict() returns")
    window = data.get("context_window")
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise ValueError(
            f"{class_name} data: context_window must be a positive int, got {window!r}"
        )
    role = data.get("digest_role", "user")  # earlier versions handed the digest as user
    if role not in DIGEST_ROLES:
        raise ValueError(
            f"{class_name} data: digest_role must be one of {list(DIGEST_ROLES)}, got {role!r}"
        )
    return window, role


def drop_unpicklable(private: dict[str, Any], counter_name: str) -> None:
    """Leave out of pickled state what does not pickle, with a warning, as LlamaIndex does.

    An LLM (the unpickled memory uses the network-free digest until given one) or a
    counter such as a lambda (it counts with the heuristic) or a ``tokenizer_fn`` (with
    LlamaIndex's tokenizer, as ``ChatMemoryBuffer``).
    """
    if private.get("_counter") is not None:
        try:
            pickle.dumps(private["_counter"])
        except Exception:
            # A tokenizer_fn comes back as LlamaIndex's tokenizer, as ChatMemoryBuffer's does.
            fallback = "llama_index" if counter_name == "tokenizer_fn" else "heuristic"
            logger.warning(
                "window-budget: removing the unpicklable counter %r; the "
                "unpickled memory counts with the %s counter until given one "
                "(counter=... in from_dict)",
                counter_name,
                fallback,
            )
            private["_counter"] = None
            private["_counter_name"] = fallback
    if private.get("_llm") is not None:
        try:
            pickle.dumps(private["_llm"])
        except Exception:
            logger.warning(
                "window-budget: the LLM does not pickle; the unpickled memory "
                "uses the network-free digest until given one"
            )
            private["_llm"] = None


class MemoryPersistence:
    """Saving and rebuilding a :class:`WindowBudgetMemory` (one of its bases)."""

    if TYPE_CHECKING:
        chat_store: BaseChatStore
        chat_store_key: str
        archive_store: BaseChatStore | None
        archive_key: str
        context_window: int
        digest_role: str
        __pydantic_private__: dict[str, Any] | None
        __pydantic_fields_set__: set[str]
        __pydantic_extra__: dict[str, Any] | None
        _llm: LLM | None
        _policy: BudgetPolicy
        _counter: TokenCounter | None
        _counter_name: str
        _last_result: CondenseResult | None
        _store_rewrite: ConditionalRewrite | None
        _runtime: Runtime | None
        _memory_store: MemoryStore | None
        _seal_key: bytes | None

        def __init__(self, **data: Any) -> None: ...

        @classmethod
        def class_name(cls) -> str:
            """Name used in serialized forms."""

        def _configure(
            self, llm: LLM | None, policy: BudgetPolicy, counter: CounterSpec | None
        ) -> None: ...

        def _conversation(self) -> StoredConversation: ...

    def _state(self) -> dict[str, Any]:
        private = {
            k: v for k, v in (self.__pydantic_private__ or {}).items() if k not in RUNTIME_ATTRS
        }
        if serializable_counter(self._counter_name):
            private["_counter"] = None  # rebuilt from the name (a lambda does not pickle)
        return {
            "__dict__": dict(self.__dict__),
            "__pydantic_fields_set__": set(self.__pydantic_fields_set__),
            "__pydantic_extra__": self.__pydantic_extra__,
            "__pydantic_private__": private,
        }

    def __getstate__(self) -> dict[str, Any]:
        """Picklable state: store, keys, window, policy, counter and LLM, without locks.

        As LlamaIndex's components do, what does not pickle is left out with a warning
        instead of raising: an LLM (the unpickled memory uses the network-free digest
        until given one) or a counter such as a lambda (the unpickled memory counts with
        the heuristic) or a ``tokenizer_fn`` (with LlamaIndex's tokenizer, as
        ``ChatMemoryBuffer``). The rest always round-trips.
        """
        state = self._state()
        drop_unpicklable(state["__pydantic_private__"], self._counter_name)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore :meth:`__getstate__` output and rebuild locks, caches and condensers."""
        private = dict(state.get("__pydantic_private__") or {})
        object.__setattr__(self, "__dict__", dict(state["__dict__"]))
        object.__setattr__(
            self, "__pydantic_fields_set__", set(state.get("__pydantic_fields_set__") or ())
        )
        object.__setattr__(self, "__pydantic_extra__", state.get("__pydantic_extra__"))
        fresh = dict.fromkeys(RUNTIME_ATTRS)
        fresh["_compact_lock"] = threading.Lock()
        object.__setattr__(self, "__pydantic_private__", {**private, **fresh})
        name = private.get("_counter_name", "heuristic")
        counter = name if serializable_counter(name) else private.get("_counter")
        last = private.get("_last_result")
        self._configure(
            private.get("_llm"),
            private.get("_policy") or default_policy(self.context_window),
            counter,
        )
        self._last_result = last

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        """An independent memory (store copied) sharing the LLM and counter objects."""
        state = self._state()
        shared = {k: state["__pydantic_private__"].pop(k, None) for k in ("_llm", "_counter")}
        state = copy.deepcopy(state, memo)
        state["__pydantic_private__"].update(shared)
        new = type(self).__new__(type(self))
        new.__setstate__(state)
        return new

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """Messages, archive, digest state and configuration as plain JSON data.

        The LLM is saved as LlamaIndex serializes it (``llm.to_dict()``, as
        ``ChatSummaryMemoryBuffer`` does) without its keys and endpoints; the stores are
        named by type, a ``SimpleChatStore``'s content saved as ``messages`` and
        ``archive``. The data also holds a random token by which :meth:`from_dict` finds
        the same objects while a memory using them is alive in this process (so an
        agent's ``Context`` restored with ``Context.from_dict`` goes on with this LLM and
        this store). Messages are dumped one by one, so this works whatever the chat
        store's own serializer does.
        """
        stored = self._conversation()
        with stored.lock:
            live = stored.read()
            archived = stored.read_archive()
        self._runtime = runtime_for(
            self._runtime,
            self._llm,
            self._counter,
            self.chat_store,
            self.archive_store,
            self._store_rewrite,
            (self.chat_store_key, self.archive_key),
            self._memory_store,
        )
        return {
            "class_name": self.class_name(),
            **saved_names(self._runtime, self._llm, self.chat_store, self.archive_store),
            "chat_store_key": self.chat_store_key,
            "archive_key": self.archive_key,
            "context_window": self.context_window,
            "digest_role": self.digest_role,
            "policy": dataclasses.asdict(self._policy),
            "counter": self._counter_name,
            "messages": [m.model_dump(mode="json") for m in live],
            "archive": [m.model_dump(mode="json") for m in archived],
            "memory_store": memory_store_name(self._memory_store, self.chat_store),
            **self._memory_entries(),
            **saved_seal(self._memory_store, self.chat_store),
        }

    def _memory_entries(self) -> dict[str, Any]:
        """A memory store kept in a snapshot chat store: its entries, saved with the messages."""
        if store_name(self.chat_store) != "SimpleChatStore":
            return {}
        entries = snapshot_entries(self._memory_store, self.chat_store, self.chat_store_key)
        return {"memory_entries": entries} if entries else {}

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as a JSON string."""
        return json.dumps(self.to_dict(**kwargs), ensure_ascii=False)

    def to_string(self) -> str:
        """The memory as a string, like ``ChatMemoryBuffer.to_string`` (:meth:`to_json`)."""
        return self.to_json()

    @classmethod
    def from_string(cls, json_str: str, **kwargs: Any) -> Self:
        """Rebuild a memory from :meth:`to_string` output (keywords as :meth:`from_dict`)."""
        return cls.from_json(json_str, **kwargs)

    @classmethod
    def restoring(cls, **resources: Any) -> contextlib.AbstractContextManager[None]:
        """Give every :meth:`from_dict` in the block what saved data does not carry.

        For a workflow ``Context`` restored in another process (or after the memory that
        saved it is gone): the workflow rebuilds its memory with ``from_dict`` and no
        keywords when a run starts, and a memory saved with an LLM or a store other than
        ``SimpleChatStore`` is refused rather than rebuilt without them. Keywords as
        :meth:`from_dict`'s (``llm``, ``chat_store``, ``archive_store``, ``counter``,
        ``store_rewrite``, ``memory_store``); keywords passed to ``from_dict`` itself win.

        >>> from llama_index.memory.window_budget import WindowBudgetMemory
        >>> with WindowBudgetMemory.restoring(llm=None):
        ...     memory = WindowBudgetMemory.from_dict({"context_window": 4096, "llm": "gpt"})
        >>> memory.llm is None
        True
        """
        return restoring(**resources)

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> Self:
        """Rebuild a memory from :meth:`to_dict` output.

        What the data does not carry comes from, in order: the keywords — ``llm``,
        ``chat_store`` (the saved messages are written there), ``archive_store`` (the
        saved archive is written there; ``chat_store`` by default), ``counter`` (a custom
        counter is serialized by name only), ``tokenizer_fn`` (as ``ChatMemoryBuffer``'s),
        ``store_rewrite``, ``memory_store`` — then an enclosing :meth:`restoring` block,
        then the very objects the saving memory used, while one memory using them is alive
        in this process (that store is the conversation: nothing is written to it).
        Failing those, an LLM whose class LlamaIndex's ``load_llm`` knows (``MockLLM``,
        ``OpenAI``, ...) is rebuilt from its saved configuration, with keys and endpoints
        from the environment; a ``tokenizer_fn`` counter becomes LlamaIndex's tokenizer,
        as ``ChatMemoryBuffer``'s does; ``SimpleChatStore`` stores (live and archive) are
        rebuilt from the saved messages, and a memory store kept in the chat store
        (``memory_store=True``) over the restored one, with its saved entries.

        Raises:
            ValueError: data that is not a memory's, or a memory saved with an LLM, a
                store or a memory store that is neither given, alive here nor rebuilt from
                the data (pass ``llm=None`` for network-free digests).
            TypeError: a keyword that is not one of those above.

        """
        window, role = check_data(data, cls.class_name())
        got = restored(data, kwargs)
        policy = BudgetPolicy(**data["policy"]) if data.get("policy") else None
        key = data.get("chat_store_key", DEFAULT_CHAT_STORE_KEY)
        if got.load_live and data.get("memory_store") == ON_CHAT_STORE:
            # Before anything reads the store's key: the saved one comes back with its entries.
            load_entries(got.chat_store, key, data.get("memory_entries"))
        memory = cls(
            chat_store=got.chat_store,
            chat_store_key=key,
            archive_key=data.get("archive_key") or key + ARCHIVE_SUFFIX,
            archive_store=got.archive_store,
            context_window=window,
            digest_role=role,
        )
        memory._store_rewrite = got.store_rewrite
        memory._memory_store = got.memory_store
        memory._seal_key = None  # the memory store's, from now on (as from_defaults)
        memory._runtime = got.runtime
        memory._configure(got.llm, policy or default_policy(memory.context_window), got.counter)
        live = [ChatMessage.model_validate(m) for m in data.get("messages", [])]
        archived = [ChatMessage.model_validate(m) for m in data.get("archive", [])]
        reseal(live + archived, data.get("seal_key"), memory._memory_store, memory.chat_store)
        memory._conversation().load(
            live if got.load_live else None, archived if got.load_archive else None
        )
        return memory

    @classmethod
    def from_json(cls, data_str: str, **kwargs: Any) -> Self:
        """Rebuild a memory from :meth:`to_json` output (same keywords as :meth:`from_dict`)."""
        try:
            data = loads(data_str)  # every failure a ValueError, deep nesting included
        except (TypeError, ValueError) as exc:
            raise ValueError(f"not a WindowBudgetMemory string: invalid JSON ({exc})") from None
        return cls.from_dict(data, **kwargs)
