"""Where a memory rebuilt from saved data gets the objects the data cannot carry.

The LLM, the counter, the stores and the memory store are not serialized (an LLM holds
keys, a store a connection). A saving memory registers them, weakly, under a random token
the data holds (:class:`Runtime`); ``from_dict`` takes them, in order, from its keywords, an
enclosing :func:`restoring` block, or the live objects the token finds — and refuses data
whose LLM or store none of these supplies rather than rebuild it without them. A memory
store kept in the memory's own chat store (``memory_store=True``) is rebuilt over the
restored chat store. That is what keeps an agent's ``Context`` working: a workflow
serializes its state, memory included, between runs and on ``ctx.to_dict()``, and rebuilds
it with ``from_dict`` and no keywords.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
import secrets
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from llama_index.core.llms.llm import LLM
from llama_index.core.memory.types import DEFAULT_CHAT_STORE_KEY
from llama_index.core.storage.chat_store import BaseChatStore, SimpleChatStore

from llama_index.memory.window_budget.conversation import ARCHIVE_SUFFIX
from llama_index.memory.window_budget.counters import serializable_counter, tokenizer_counter
from llama_index.memory.window_budget.memory_store import on_chat_store, resolve_memory_store
from window_budget.contract import TokenCounter
from window_budget.memory import MemoryStore
from window_budget.stores import ConditionalRewrite

__all__ = [
    "ON_CHAT_STORE",
    "RESOURCE_KEYWORDS",
    "Restored",
    "Runtime",
    "llm_config",
    "llm_from_config",
    "memory_store_name",
    "restored",
    "restoring",
    "runtime_for",
]

logger = logging.getLogger(__name__)

RESOURCE_KEYWORDS = (
    "llm",
    "chat_store",
    "archive_store",
    "counter",
    "tokenizer_fn",
    "store_rewrite",
    "memory_store",
)
"""What ``from_dict`` and :func:`restoring` accept beside the data."""
ON_CHAT_STORE = "chat_store"
"""How saved data names a memory store that lives in the memory's own chat store
(``memory_store=True``): rebuilt over the restored chat store."""
_SNAPSHOT_STORE = "SimpleChatStore"  # a store whose whole content the saved data holds

# Never written, never read back: what an LLM sends its key with and where it sends it.
# Saved data may come from anyone, and must not choose the endpoint an environment key goes to.
_PRIVATE_FIELD = re.compile(
    r"(^|_)(keys?|secrets?|password|token|credentials?|headers?|base|urls?|endpoint|host|prox(y|ies))$"
    r"|^(api_base|base_url|azure_endpoint|azure_ad_token_provider|http_client|async_http_client)$",
    re.IGNORECASE,
)

_RESTORING: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "window_budget_restoring", default=None
)


class Runtime:
    """The objects a memory's data cannot carry: its LLM, counter, stores, rewrite, memory store.

    Registered (weakly) under a random token that the saved data names, and held by every
    memory using these objects, so ``from_dict`` in the same process gives a rebuilt
    memory (an agent's ``Context`` restored) the same LLM and the same store while any of
    them is alive — for the same conversation only: data naming other keys gets nothing.
    """

    __slots__ = (
        "__weakref__",
        "archive_store",
        "chat_store",
        "counter",
        "keys",
        "llm",
        "memory_store",
        "store_rewrite",
        "token",
    )

    def __init__(
        self,
        llm: LLM | None,
        counter: TokenCounter | None,
        chat_store: BaseChatStore,
        archive_store: BaseChatStore | None,
        store_rewrite: ConditionalRewrite | None,
        keys: tuple[str, str],
        memory_store: MemoryStore | None = None,
    ) -> None:
        self.token = secrets.token_hex(16)  # unguessable: saved data may come from anyone
        self.keys = keys  # the conversation's key and its archive's
        self.llm = llm
        self.counter = counter
        self.chat_store = chat_store
        self.archive_store = archive_store
        self.store_rewrite = store_rewrite
        self.memory_store = memory_store

    def holds(
        self,
        llm: LLM | None,
        chat_store: BaseChatStore,
        archive_store: BaseChatStore | None,
        store_rewrite: ConditionalRewrite | None,
        keys: tuple[str, str],
        memory_store: MemoryStore | None = None,
    ) -> bool:
        """True when these are exactly its objects, for the same conversation."""
        return (
            self.keys == keys
            and self.llm is llm
            and self.chat_store is chat_store
            and self.archive_store is archive_store
            and self.store_rewrite is store_rewrite
            and self.memory_store is memory_store
        )


_LIVE: weakref.WeakValueDictionary[str, Runtime] = weakref.WeakValueDictionary()


def runtime_for(
    current: Runtime | None,
    llm: LLM | None,
    counter: TokenCounter | None,
    chat_store: BaseChatStore,
    archive_store: BaseChatStore | None,
    store_rewrite: ConditionalRewrite | None,
    keys: tuple[str, str],
    memory_store: MemoryStore | None = None,
) -> Runtime:
    """``current`` if it still holds these objects, else a new registered :class:`Runtime`."""
    held = (llm, chat_store, archive_store, store_rewrite, keys, memory_store)
    if current is not None and current.holds(*held):
        return current
    runtime = Runtime(llm, counter, chat_store, archive_store, store_rewrite, keys, memory_store)
    _LIVE[runtime.token] = runtime
    return runtime


def llm_config(llm: LLM | None) -> dict[str, Any] | None:
    """The LLM as LlamaIndex serializes it (``to_dict``), without keys or endpoints; or None.

    None when the LLM's own serializer fails (a callable field, say): the data then only
    names it and ``from_dict`` needs it again.
    """
    if llm is None:
        return None
    try:
        data = llm.to_dict(mode="json")
    except Exception:  # any LLM's serializer may fail; the name is still saved
        return None
    return _public(data)


def _name(saved: object, *, quote: bool = False) -> str:
    """A name saved data gives, fit for an error message: short, one line, printable."""
    text = saved if isinstance(saved, str) else type(saved).__name__
    text = "".join(c if c.isprintable() else "?" for c in text)
    text = text if len(text) <= 60 else text[:59] + "…"
    return repr(text) if quote else text


def _public(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if not _PRIVATE_FIELD.search(str(k))}


def llm_from_config(config: object) -> LLM | None:
    """The LLM ``config`` describes, through LlamaIndex's own loader, or None.

    Only classes LlamaIndex's ``load_llm`` recognizes are built (``MockLLM``, and
    ``OpenAI`` / ``AzureOpenAI`` / ``HuggingFaceInferenceAPI`` when installed); keys and
    endpoints are never read from the data, so they come from the environment, as for a
    fresh LLM.
    """
    from llama_index.core.llms.loading import RECOGNIZED_LLMS, load_llm

    if not isinstance(config, dict) or config.get("class_name") not in RECOGNIZED_LLMS:
        return None
    try:
        return load_llm(_public(config))
    except Exception as exc:  # bad saved data: refused below, by name
        logger.warning("window-budget: could not rebuild the saved LLM (%s)", exc)
        return None


@contextlib.contextmanager
def restoring(**resources: Any) -> Iterator[None]:
    """Give every ``from_dict`` in the block the objects its data does not carry.

    Raises:
        TypeError: a keyword that is not one of :data:`RESOURCE_KEYWORDS`.

    """
    unknown = sorted(set(resources) - set(RESOURCE_KEYWORDS))
    if unknown:
        raise TypeError(
            f"restoring() takes {', '.join(RESOURCE_KEYWORDS)}; got {', '.join(unknown)}"
        )
    token = _RESTORING.set({**(_RESTORING.get() or {}), **resources})
    try:
        yield
    finally:
        _RESTORING.reset(token)


@dataclass(slots=True)
class Restored:
    """Where a memory rebuilt by ``from_dict`` gets what the saved data does not carry."""

    llm: LLM | None
    """The LLM writing the digests."""
    counter: Any
    """The counter, or the name it is rebuilt from."""
    chat_store: BaseChatStore
    """The live store."""
    archive_store: BaseChatStore | None
    """The archive store (None: the live store)."""
    store_rewrite: ConditionalRewrite | None
    """The conditional rewrite to use, if one was given or is the live one."""
    runtime: Runtime | None
    """The live objects reused whole, or None."""
    load_live: bool
    """Write the saved live messages into ``chat_store`` (not when it is the live one)."""
    load_archive: bool
    """Write the saved archive into the archive store (not when it is the live one)."""
    memory_store: MemoryStore | None = None
    """Where the full ledger and the folded originals go (``recall``'s), or None."""


def memory_store_name(store: MemoryStore | None, chat_store: BaseChatStore) -> str | None:
    """How ``to_dict`` names a memory store: :data:`ON_CHAT_STORE`, its type, or None."""
    if store is None:
        return None
    if on_chat_store(store, chat_store):
        return ON_CHAT_STORE
    return type(store).__name__


def _memory_store(
    data: dict[str, Any],
    given: dict[str, Any],
    live: Runtime | None,
    store: BaseChatStore,
    missing: list[str],
) -> MemoryStore | None:
    """The memory store: given, the live one, rebuilt over ``store``, or asked for by name."""
    if "memory_store" in given:
        return resolve_memory_store(given["memory_store"], store)
    if live is not None and store is live.chat_store:
        return live.memory_store
    saved = data.get("memory_store")  # absent from data written before version 4
    if saved == ON_CHAT_STORE:
        return resolve_memory_store(True, store)
    if saved is not None:
        missing.append(f"the memory store {_name(saved)} (memory_store=...)")
    return None


def _counter(data: dict[str, Any], given: dict[str, Any], live: Runtime | None) -> Any:
    if given.get("tokenizer_fn") is not None:
        return tokenizer_counter(given["tokenizer_fn"])
    counter: Any = given.get("counter") or data.get("counter") or "heuristic"
    if isinstance(counter, str) and not serializable_counter(counter):
        if live is not None and live.counter is not None:
            return live.counter
        if counter == "tokenizer_fn":
            # As ChatMemoryBuffer, whose tokenizer_fn is not saved and comes back as
            # LlamaIndex's configured tokenizer.
            logger.warning(
                "window-budget: the saved memory counted with a tokenizer_fn, which is not "
                "serializable; counting with LlamaIndex's tokenizer (get_tokenizer()), as "
                "ChatMemoryBuffer does — pass tokenizer_fn=... to from_dict to keep yours"
            )
            return "llama_index"
        logger.warning(
            "window-budget: counter %r is not serializable; pass counter=... "
            "to from_dict; using the heuristic",
            counter,
        )
        return "heuristic"
    return counter


def _stores(
    data: dict[str, Any], given: dict[str, Any], live: Runtime | None, missing: list[str]
) -> tuple[BaseChatStore, bool, BaseChatStore | None, bool]:
    """``(chat store, load it, archive store, load it)``; what cannot be had goes to ``missing``."""
    saved_store = data.get("chat_store")  # absent from data written before version 2
    store: BaseChatStore
    if given.get("chat_store") is not None:
        store, load_live = given["chat_store"], True
    elif live is not None:
        store, load_live = live.chat_store, False  # the conversation itself: nothing to load
    else:
        store, load_live = SimpleChatStore(), True
        if saved_store not in (None, _SNAPSHOT_STORE):
            missing.append(f"the chat store {_name(saved_store)} (chat_store=...)")
    saved_archive = data.get("archive_store")
    if given.get("archive_store") is not None:
        return store, load_live, given["archive_store"], True
    if live is not None and store is live.chat_store:
        return store, load_live, live.archive_store, False
    if saved_archive == _SNAPSHOT_STORE:
        return store, load_live, SimpleChatStore(), True
    if saved_archive is not None:
        if live is not None:
            return store, load_live, live.archive_store, False
        missing.append(f"the archive store {_name(saved_archive)} (archive_store=...)")
    return store, load_live, None, True


def restored(data: dict[str, Any], kwargs: dict[str, Any]) -> Restored:
    """Resolve the LLM, counter and stores for ``data``: given, live in-process, or refused.

    Raises:
        ValueError: the saved memory used an LLM or a store that is neither given nor
            alive in this process (one sentence naming them and how to pass them).

    """
    unknown = sorted(set(kwargs) - set(RESOURCE_KEYWORDS))
    if unknown:
        raise TypeError(
            f"from_dict() takes {', '.join(RESOURCE_KEYWORDS)}; got {', '.join(unknown)}"
        )
    given = {**(_RESTORING.get() or {}), **kwargs}
    token = data.get("instance")
    live = _LIVE.get(token) if isinstance(token, str) else None
    key = data.get("chat_store_key", DEFAULT_CHAT_STORE_KEY)
    keys = (key, data.get("archive_key") or key + ARCHIVE_SUFFIX)
    if live is not None and live.keys != keys:
        live = None  # a token is no key to another conversation in the same store
    missing: list[str] = []
    if "llm" in given:
        llm = given["llm"]
    elif live is not None:
        llm = live.llm
    else:
        llm = llm_from_config(data.get("llm_config"))
        if llm is None and data.get("llm"):
            missing.append(f"the LLM {_name(data['llm'], quote=True)} (llm=...)")
    counter = _counter(data, given, live)
    store, load_live, archive, load_archive = _stores(data, given, live, missing)
    memory_store = _memory_store(data, given, live, store, missing)
    if missing:
        raise ValueError(
            f"WindowBudgetMemory.from_dict: the saved memory used {' and '.join(missing)}, "
            "not serialized and held by no memory alive in this process; pass them to "
            "from_dict, or restore a workflow Context inside "
            "`with WindowBudgetMemory.restoring(llm=..., chat_store=...)` (llm=None for "
            "network-free digests)"
        )
    rewrite = given.get("store_rewrite")
    if rewrite is None and live is not None and store is live.chat_store:
        rewrite = live.store_rewrite
    whole = live is not None and live.holds(llm, store, archive, rewrite, keys, memory_store)
    return Restored(
        llm,
        counter,
        store,
        archive,
        rewrite,
        live if whole else None,
        load_live,
        load_archive,
        memory_store,
    )
