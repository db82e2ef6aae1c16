"""The memory store over LangGraph's ``BaseStore``: the archive beside an agent's thread.

:class:`LangGraphMemoryStore` implements window-budget's
:class:`~window_budget.memory.MemoryStore` over any LangGraph store (``InMemoryStore``,
``PostgresStore``, ``AsyncPostgresStore``, ...), so a digest's full fact ledger and every
message it folded live where the agent's other long-term memory lives. Items, under the
store's namespaces (``namespace`` defaults to ``("window_budget",)``):

- ``(*namespace, conversation, "originals")``: one item per folded message, keyed by its
  archive position zero-padded to 16 digits (``{"message": ...}``, plus ``"text"`` for the
  store's search index when it has one);
- ``(*namespace, conversation, "ledger")``: one item per ledger version, keyed by the version
  zero-padded to 12 digits (``{"ledger": ..., "seal": ...}``);
- ``(*namespace, conversation, "marks")``: small items naming each archive's end and each
  version, so the next position and version are found without reading the large items;
- ``(*namespace, "_key")``: the store's secret, ``secrets.token_bytes(32)`` as hex, created
  once and never expiring. Digest records are sealed with it, so every process sharing the
  store honours the digests the others wrote, and no client can forge one.

A conversation (a LangGraph ``thread_id``) is one namespace label: ``%`` and ``.`` (which
LangGraph refuses in a label) are written ``%25`` and ``%2E``.

Concurrency: writes by one object are serialized by a lock. Across processes the store has no
put-if-absent, so the key is created by reading it, writing one when there is none and
reading back what is stored: two processes starting over an empty store at the same instant
may both write one, and the one that read back its own key before the other's write landed
seals its first digests with a key that is then lost (those digests read as ordinary
messages after a restart; nothing else is affected). Set the key yourself (``key=``) to rule
that out. Likewise two writers saving a ledger version of one conversation at once may pick
the same number; the seal check then refuses the overwritten one and its digest's bounded
record stands in for it.

The calls are the store's sync API. An async-only store (``AsyncPostgresStore``, any
``AsyncBatchedBaseStore``) refuses sync calls on its event loop: :attr:`async_only` says
so, and the adapter then runs each compaction in a worker thread (with the chat model's
sync ``invoke``) and the recall tool's lookups there too.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from langgraph.store.base import BaseStore, GetOp, Item, PutOp
from langgraph.store.base.batch import AsyncBatchedBaseStore

from window_budget.bridge.stores import LazyKey, key_from_hex, new_key_hex, original_text
from window_budget.errors import ConfigError, StoreError
from window_budget.memory import LedgerVersion, check_conversation

__all__ = ["LangGraphMemoryStore"]

PAGE: Final = 100
"""Items read per ``search`` call when listing a namespace."""
_KEY_LABEL: Final = "_key"


def _label(conversation: str) -> str:
    """``conversation`` as one namespace label (no ``.``; ``%`` escaped so it reverses)."""
    return check_conversation(conversation).replace("%", "%25").replace(".", "%2E")


def _check_namespace(namespace: object) -> tuple[str, ...]:
    if (
        not isinstance(namespace, tuple)
        or not namespace
        or not all(isinstance(p, str) and p and "." not in p for p in namespace)
    ):
        raise ConfigError(
            f"namespace must be a non-empty tuple of non-empty strings without '.', "
            f"not {namespace!r:.60}; e.g. namespace=('window_budget',)"
        )
    if namespace[0] == "langgraph":
        raise ConfigError("namespace may not start with 'langgraph' (LangGraph reserves it)")
    return namespace


class LangGraphMemoryStore:
    """A :class:`~window_budget.memory.MemoryStore` over a LangGraph ``BaseStore``.

    Args:
        store: the LangGraph store (the one given to ``create_agent(..., store=...)``).
        namespace: where window-budget's items go in it.
        key: the secret digest records are sealed with; by default the one kept in the
            store (created on first use, see the module docstring).

    When the store was built with a search index (``index={"embed": ..., "dims": ...}``),
    archived messages are indexed by their text and ``recall``'s word search asks the
    store; otherwise recall ranks the archived messages itself.

    >>> from langgraph.store.memory import InMemoryStore
    >>> memory = LangGraphMemoryStore(InMemoryStore())
    >>> memory.archive("thread-1", 0, [{"role": "user", "content": "Port the loader."}])
    >>> memory.archived("thread-1"), memory.original("thread-1", 0)["content"]
    (1, 'Port the loader.')

    """

    def __init__(
        self,
        store: BaseStore,
        namespace: tuple[str, ...] = ("window_budget",),
        *,
        key: bytes | None = None,
    ) -> None:
        if not isinstance(store, BaseStore):
            raise ConfigError(
                f"LangGraphMemoryStore wraps a LangGraph BaseStore (InMemoryStore, "
                f"PostgresStore, ...), not {type(store).__name__}"
            )
        self._key = LazyKey(key, self._load_key)
        self.store = store
        """The LangGraph store."""
        self.namespace = _check_namespace(namespace)
        """The namespace prefix of every item written."""
        self._lock = threading.Lock()
        index = getattr(store, "index_config", None)
        self._indexed = bool(index)

    @property
    def async_only(self) -> bool:
        """True when the store refuses sync calls on its event loop (``AsyncPostgresStore``)."""
        return isinstance(self.store, AsyncBatchedBaseStore)

    @property
    def key(self) -> bytes:
        """The store's secret, read (or created) on first use; see the module docstring."""
        return self._key.get()

    def _load_key(self) -> bytes:
        where = (*self.namespace, _KEY_LABEL)
        item = self.store.get(where, "key")
        if item is None:
            fresh = {"key": new_key_hex()}
            self.store.batch([PutOp(where, "key", fresh, index=False, ttl=None)])
            item = self.store.get(where, "key")  # what is stored, if another process won
        key = key_from_hex(item.value.get("key")) if item is not None else None
        if key is None:
            raise StoreError(
                f"the window-budget key in {where!r} is missing or damaged; delete the item "
                "to make a new one (digests sealed with the old key will read as ordinary "
                "messages)"
            )
        return key

    def _where(self, conversation: str, part: str) -> tuple[str, ...]:
        return (*self.namespace, _label(conversation), part)

    def _items(self, where: tuple[str, ...]) -> list[Item]:
        """Every item of the namespace ``where``, page by page."""
        out: list[Item] = []
        while True:
            page = self.store.search(where, limit=PAGE, offset=len(out), refresh_ttl=False)
            out.extend(item for item in page if item.namespace == where)
            if len(page) < PAGE:
                return out

    def _marks(self, conversation: str) -> tuple[int, int]:
        """``(archived, newest version)`` from the conversation's marks."""
        end = version = 0
        for item in self._items(self._where(conversation, "marks")):
            kind, _, number = item.key.partition("-")
            if not number.isdigit():
                continue
            if kind == "end":
                end = max(end, int(number))
            elif kind == "ledger":
                version = max(version, int(number))
        return end, version

    def archive(
        self, conversation: str, start: int, originals: Sequence[Mapping[str, Any]]
    ) -> None:
        """Keep ``originals`` from position ``start`` on; kept positions are left alone."""
        where = self._where(conversation, "originals")
        if not originals:
            return
        keys = [f"{start + i:016d}" for i in range(len(originals))]
        end = start + len(originals)
        with self._lock:
            found = self.store.batch([GetOp(where, k, False) for k in keys])
            puts = [
                PutOp(
                    where, k, self._value(o), index=["text"] if self._indexed else False, ttl=None
                )
                for k, o, held in zip(keys, originals, found, strict=True)
                if held is None
            ]
            mark = (*self.namespace, _label(conversation), "marks")
            puts.append(PutOp(mark, f"end-{end:016d}", {"end": end}, index=False, ttl=None))
            self.store.batch(puts)

    def _value(self, original: Mapping[str, Any]) -> dict[str, Any]:
        value: dict[str, Any] = {"message": dict(original)}
        if self._indexed:
            value["text"] = original_text(original)
        return value

    def archived(self, conversation: str) -> int:
        """One more than the highest position kept (0 for a new conversation)."""
        return self._marks(conversation)[0]

    def original(self, conversation: str, position: int) -> Mapping[str, Any] | None:
        """The original at ``position``, or None."""
        if not 0 <= position < 10**16:
            return None
        item = self.store.get(self._where(conversation, "originals"), f"{position:016d}")
        message = None if item is None else item.value.get("message")
        return message if isinstance(message, Mapping) else None

    def originals(self, conversation: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
        """Every original, by position (read when called: a snapshot)."""
        found = []
        for item in self._items(self._where(conversation, "originals")):
            message = item.value.get("message")
            if item.key.isdigit() and isinstance(message, Mapping):
                found.append((int(item.key), message))
        return iter(sorted(found, key=lambda pair: pair[0]))

    def search(self, conversation: str, words: Sequence[str], *, limit: int) -> list[int] | None:
        """Positions of the originals nearest to ``words`` by the store's index, best first.

        None when the store has no search index (recall then ranks the originals itself).
        """
        terms = " ".join(w for w in words if w)
        if not self._indexed or not terms:
            return None
        where = self._where(conversation, "originals")
        found = self.store.search(where, query=terms, limit=limit, refresh_ttl=False)
        return [int(item.key) for item in found if item.key.isdigit()]

    def save_ledger(self, conversation: str, ledger: Mapping[str, Any], *, seal: str) -> int:
        """Store a new ledger version for the digest sealed ``seal``; returns its number."""
        where = self._where(conversation, "ledger")
        with self._lock:
            version = self._marks(conversation)[1] + 1
            mark = (*self.namespace, _label(conversation), "marks")
            self.store.batch(
                [
                    PutOp(
                        where,
                        f"{version:012d}",
                        {"ledger": dict(ledger), "seal": seal},
                        index=False,
                        ttl=None,
                    ),
                    PutOp(
                        mark, f"ledger-{version:012d}", {"version": version}, index=False, ttl=None
                    ),
                ]
            )
        return version

    def ledger(self, conversation: str, version: int | None = None) -> LedgerVersion | None:
        """A stored version (the newest when ``version`` is None), or None."""
        if version is None:
            version = self._marks(conversation)[1]
        if not 0 < version < 10**12:
            return None
        item = self.store.get(self._where(conversation, "ledger"), f"{version:012d}")
        if item is None:
            return None
        ledger, seal = item.value.get("ledger"), item.value.get("seal")
        if not isinstance(ledger, Mapping) or not isinstance(seal, str):
            return None
        return LedgerVersion(version=version, ledger=ledger, seal=seal)

    def __repr__(self) -> str:
        return f"LangGraphMemoryStore({type(self.store).__name__}, namespace={self.namespace!r})"
