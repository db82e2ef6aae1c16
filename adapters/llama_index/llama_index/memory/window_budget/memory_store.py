"""The memory store over a LlamaIndex chat store: the archive beside a conversation.

:class:`ChatStoreMemoryStore` implements window-budget's
:class:`~window_budget.memory.MemoryStore` over any LlamaIndex ``BaseChatStore``
(``SimpleChatStore``, the SQLite, Redis and PostgreSQL chat stores, ...), so a digest's full
fact ledger and every message it folded live where the conversation already lives. Keys,
under ``key_prefix`` (``"window_budget"`` by default):

- ``{prefix}:{conversation}:originals``: one ``ChatMessage`` per folded message, its
  content the original's text (so the store stays readable) and its ``additional_kwargs``
  the original itself (``message_to_dict`` form) and its archive position;
- ``{prefix}:{conversation}:ledger``: one ``ChatMessage`` per ledger version, the JSON
  ledger, the seal of its digest and the version number in ``additional_kwargs``;
- ``{prefix}:_key``: the store's secret, ``secrets.token_bytes(32)`` as hex, created once.
  Digest records are sealed with it, so every process sharing the chat store honours the
  digests the others wrote, and no client can forge one.

Only ``get_messages``, ``add_message`` and ``set_messages`` are used, and originals and
ledger versions are only ever appended. Writes by one object are serialized by a lock;
across processes a chat store has no put-if-absent, so the key is created by reading it,
adding one when there is none and reading back the first one stored (two processes racing
over an empty store both end up with the first). Two processes saving a version of one
conversation at once may both number it N; the reader takes the last one stored, the seal
check refuses a version that does not belong to a digest, and that digest's bounded record
stands in for it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.storage.chat_store import BaseChatStore

from window_budget.bridge.stores import LazyKey, key_from_hex, new_key_hex, original_text
from window_budget.digest import RECORD_KEY, SECRET_ENV, resealed
from window_budget.errors import ConfigError, StoreError
from window_budget.memory import LedgerVersion, MemoryStore, check_conversation

__all__ = [
    "ChatStoreMemoryStore",
    "load_entries",
    "on_chat_store",
    "reseal",
    "resolve_memory_store",
    "saved_seal",
    "seal_key_of",
    "snapshot_entries",
]

ORIGINAL_FIELD: Final = "window_budget_original"
"""``additional_kwargs`` key of an archived original (``message_to_dict`` form)."""
POSITION_FIELD: Final = "window_budget_position"
"""``additional_kwargs`` key of an archived original's position."""
LEDGER_FIELD: Final = "window_budget_ledger"
"""``additional_kwargs`` key of a stored ledger version (``ledger_to_json`` form)."""
SEAL_FIELD: Final = "window_budget_seal"
"""``additional_kwargs`` key of the seal of the digest a ledger version belongs to."""
VERSION_FIELD: Final = "window_budget_version"
"""``additional_kwargs`` key of a ledger version's number."""
KEY_FIELD: Final = "window_budget_key"
"""``additional_kwargs`` key of the store's secret (hex)."""


def _role(original: Mapping[str, Any]) -> MessageRole:
    role = {"toolResult": "tool", "custom": "user"}.get(str(original.get("role")), "")
    try:
        return MessageRole(role or str(original.get("role")))
    except ValueError:
        return MessageRole.USER


def _number(value: object) -> int | None:
    return value if type(value) is int and value >= 0 else None


class ChatStoreMemoryStore:
    """A :class:`~window_budget.memory.MemoryStore` over a LlamaIndex ``BaseChatStore``.

    Args:
        chat_store: the chat store (often the memory's own).
        key_prefix: the prefix of every key written (see the module docstring).
        key: the secret digest records are sealed with; by default the one kept in the
            chat store (created on first use).

    >>> from llama_index.core.storage.chat_store import SimpleChatStore
    >>> store = ChatStoreMemoryStore(SimpleChatStore())
    >>> store.archive("chat-1", 0, [{"role": "user", "content": "Port the loader."}])
    >>> store.archived("chat-1"), store.original("chat-1", 0)["content"]
    (1, 'Port the loader.')

    """

    def __init__(
        self,
        chat_store: BaseChatStore,
        key_prefix: str = "window_budget",
        *,
        key: bytes | None = None,
    ) -> None:
        if not isinstance(chat_store, BaseChatStore):
            raise ConfigError(
                f"ChatStoreMemoryStore wraps a LlamaIndex BaseChatStore (SimpleChatStore, "
                f"RedisChatStore, ...), not {type(chat_store).__name__}"
            )
        if not isinstance(key_prefix, str) or not key_prefix or ":" in key_prefix:
            raise ConfigError(
                f"key_prefix must be a non-empty string without ':', not {key_prefix!r}"
            )
        self._key = LazyKey(key, self._load_key)
        self.chat_store = chat_store
        """The LlamaIndex chat store."""
        self.key_prefix = key_prefix
        """The prefix of every key written."""
        self._lock = threading.RLock()

    @property
    def key(self) -> bytes:
        """The store's secret, read (or created) on first use; see the module docstring."""
        return self._key.get()

    def _stored_key(self, where: str) -> bytes | None:
        for message in self.chat_store.get_messages(where):
            key = key_from_hex(message.additional_kwargs.get(KEY_FIELD))
            if key is not None:
                return key
        return None

    def _load_key(self) -> bytes:
        where = f"{self.key_prefix}:_key"
        key = self._stored_key(where)
        if key is None:
            fresh = new_key_hex()
            self.chat_store.add_message(
                where,
                ChatMessage(
                    role=MessageRole.SYSTEM,
                    content="window-budget's secret for sealing digest records; do not share",
                    additional_kwargs={KEY_FIELD: fresh},
                ),
            )
            key = self._stored_key(where)  # the first one stored, if another process won
        if key is None:
            raise StoreError(f"the window-budget key under {where!r} could not be stored or read")
        return key

    def _where(self, conversation: str, part: str) -> str:
        return f"{self.key_prefix}:{check_conversation(conversation)}:{part}"

    def _held(self, conversation: str) -> dict[int, Mapping[str, Any]]:
        """Every original by position (the first stored wins a position)."""
        held: dict[int, Mapping[str, Any]] = {}
        for message in self.chat_store.get_messages(self._where(conversation, "originals")):
            kwargs = message.additional_kwargs
            position, original = _number(kwargs.get(POSITION_FIELD)), kwargs.get(ORIGINAL_FIELD)
            if position is not None and isinstance(original, Mapping):
                held.setdefault(position, original)
        return held

    def archive(
        self, conversation: str, start: int, originals: Sequence[Mapping[str, Any]]
    ) -> None:
        """Keep ``originals`` from position ``start`` on; kept positions are left alone."""
        where = self._where(conversation, "originals")
        with self._lock:
            held = self._held(conversation)
            for i, original in enumerate(originals):
                if start + i in held:
                    continue
                kept = dict(original)
                self.chat_store.add_message(
                    where,
                    ChatMessage(
                        role=_role(kept),
                        content=original_text(kept),
                        additional_kwargs={ORIGINAL_FIELD: kept, POSITION_FIELD: start + i},
                    ),
                )
                held[start + i] = kept

    def archived(self, conversation: str) -> int:
        """One more than the highest position kept (0 for a new conversation)."""
        held = self._held(conversation)
        return max(held) + 1 if held else 0

    def original(self, conversation: str, position: int) -> Mapping[str, Any] | None:
        """The original at ``position``, or None."""
        return self._held(conversation).get(position)

    def originals(self, conversation: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
        """Every original, by position (read when called: a snapshot)."""
        return iter(sorted(self._held(conversation).items()))

    def _versions(self, conversation: str) -> dict[int, LedgerVersion]:
        versions: dict[int, LedgerVersion] = {}
        for message in self.chat_store.get_messages(self._where(conversation, "ledger")):
            kwargs = message.additional_kwargs
            number = _number(kwargs.get(VERSION_FIELD))
            ledger, seal = kwargs.get(LEDGER_FIELD), kwargs.get(SEAL_FIELD)
            if number and isinstance(ledger, Mapping) and isinstance(seal, str):
                versions[number] = LedgerVersion(version=number, ledger=ledger, seal=seal)
        return versions

    def save_ledger(self, conversation: str, ledger: Mapping[str, Any], *, seal: str) -> int:
        """Store a new ledger version for the digest sealed ``seal``; returns its number."""
        where = self._where(conversation, "ledger")
        with self._lock:
            version = max(self._versions(conversation), default=0) + 1
            facts = ledger.get("facts") if isinstance(ledger.get("facts"), list) else None
            self.chat_store.add_message(
                where,
                ChatMessage(
                    role=MessageRole.SYSTEM,
                    content=f"fact ledger v{version}: {len(facts or ())} facts",
                    additional_kwargs={
                        LEDGER_FIELD: dict(ledger),
                        SEAL_FIELD: seal,
                        VERSION_FIELD: version,
                    },
                ),
            )
        return version

    def ledger(self, conversation: str, version: int | None = None) -> LedgerVersion | None:
        """A stored version (the newest when ``version`` is None), or None."""
        versions = self._versions(conversation)
        if version is None:
            version = max(versions, default=0)
        return versions.get(version)

    def __getstate__(self) -> dict[str, Any]:
        """Picklable state (the lock is left out)."""
        return {
            "chat_store": self.chat_store,
            "key_prefix": self.key_prefix,
            "key": self._key.given,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Rebuild from :meth:`__getstate__`."""
        self.chat_store, self.key_prefix = state["chat_store"], state["key_prefix"]
        self._key, self._lock = LazyKey(state["key"], self._load_key), threading.RLock()

    def __repr__(self) -> str:
        name = type(self.chat_store).__name__
        return f"ChatStoreMemoryStore({name}, key_prefix={self.key_prefix!r})"


def resolve_memory_store(spec: object, chat_store: BaseChatStore) -> MemoryStore | None:
    """The memory store ``from_defaults(memory_store=spec)`` asks for.

    None or False: none; True or ``"chat_store"``: a :class:`ChatStoreMemoryStore` over
    ``chat_store``; a :class:`~window_budget.memory.MemoryStore`: itself.
    """
    if spec is None or spec is False:
        return None
    if spec is True or spec == "chat_store":
        return ChatStoreMemoryStore(chat_store)
    if isinstance(spec, MemoryStore):
        return spec
    raise ConfigError(
        f"memory_store must be a window_budget MemoryStore, True, 'chat_store' or None, "
        f"not {type(spec).__name__}"
    )


def on_chat_store(store: MemoryStore | None, chat_store: BaseChatStore) -> bool:
    """True when ``store`` is what ``memory_store=True`` builds over ``chat_store``.

    That is, a :class:`ChatStoreMemoryStore` over that very chat store, with the default
    prefix and the key kept in the chat store: saved data can name it, and it is rebuilt
    over the restored chat store.
    """
    return (
        isinstance(store, ChatStoreMemoryStore)
        and store.chat_store is chat_store
        and store.key_prefix == "window_budget"
        and store._stored_key("window_budget:_key") == store.key
    )


def _entry_keys(conversation: str) -> tuple[str, ...]:
    prefix = f"window_budget:{conversation}"
    return ("window_budget:_key", f"{prefix}:originals", f"{prefix}:ledger")


def snapshot_entries(
    store: MemoryStore | None, chat_store: BaseChatStore, conversation: str
) -> dict[str, list[dict[str, Any]]]:
    """The entries ``memory_store=True`` keeps for ``conversation``, as JSON data.

    For saved data whose chat store is a snapshot (a ``SimpleChatStore``, rebuilt from the
    data): the key, the folded originals and the ledger versions come back with it.
    Empty for any other memory store (it keeps its entries itself).
    """
    if not on_chat_store(store, chat_store):
        return {}
    out = {}
    for key in _entry_keys(conversation):
        messages = chat_store.get_messages(key)
        if messages:
            out[key] = [m.model_dump(mode="json") for m in messages]
    return out


def load_entries(chat_store: BaseChatStore, conversation: str, saved: object) -> None:
    """Write back what :func:`snapshot_entries` saved (only those keys of ``conversation``).

    A key the chat store already keeps stays: other conversations' digests are sealed with
    it (the restored digests are resealed under it, see :func:`reseal`).

    Raises:
        ValueError: ``saved`` is not what it wrote (one sentence naming the entry).

    """
    if saved is None:
        return
    allowed = _entry_keys(conversation)
    if not isinstance(saved, Mapping) or not all(k in allowed for k in saved):
        raise ValueError(
            f"WindowBudgetMemory data: memory_entries must map {', '.join(allowed)} to "
            "lists of messages"
        )
    for key, entries in saved.items():
        try:
            messages = [ChatMessage.model_validate(m) for m in entries]
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"WindowBudgetMemory data: memory_entries[{key!r}] is not a list of "
                f"messages ({str(exc).splitlines()[0]})"
            ) from None
        if key != allowed[0] or not chat_store.get_messages(key):
            chat_store.set_messages(key, messages)


def seal_key_of(store: MemoryStore | None, chat_store: BaseChatStore) -> bytes | None:
    """The key a memory seals its digest records with: its memory store's, when it has one.

    Without one, ``$WINDOW_BUDGET_SECRET`` when it is set (None: the records module reads
    it), else the secret kept in the chat store itself (as :class:`ChatStoreMemoryStore`
    keeps it), so every worker and restart over one chat store honours the digests the
    others wrote, and a client that writes message metadata cannot forge one.
    """
    if store is not None:
        return store.key
    if os.environ.get(SECRET_ENV):
        return None
    return ChatStoreMemoryStore(chat_store).key


def saved_seal(store: MemoryStore | None, chat_store: BaseChatStore) -> dict[str, str]:
    """What ``to_dict`` keeps of the key: the saved digests verify where they are restored."""
    key = seal_key_of(store, chat_store)
    return {} if key is None else {"seal_key": key.hex()}


def reseal(
    messages: Sequence[ChatMessage],
    saved: object,
    store: MemoryStore | None,
    chat_store: BaseChatStore,
) -> None:
    """Seal the restored digests in ``messages`` under the destination's key, in place.

    ``saved`` is the ``seal_key`` the data was saved with; a digest that does not verify
    under it (edited, forged) stays as it is, an ordinary message where it is restored.
    """
    try:
        old = bytes.fromhex(saved) if isinstance(saved, str) else b""
    except ValueError:
        old = b""
    if len(old) < 16:
        return
    new = seal_key_of(store, chat_store)
    for message in messages:
        record = message.additional_kwargs.get(RECORD_KEY) if message.additional_kwargs else None
        if record is not None:
            fresh = resealed(record, message.content or "", old, new)
            if fresh is not None:
                message.additional_kwargs[RECORD_KEY] = fresh
