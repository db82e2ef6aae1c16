"""The archive in a ``SimpleChatStore``, packed: one entry per compaction, not per message.

A web server that keeps its chats in a ``SimpleChatStore`` file loads the whole file on
every request (``SimpleChatStore.from_persist_path``: ``json.load``, then pydantic
validates every message of every key). The archive shares that file by default, so an
archive of 10k folded messages cost each request 10k validations. Packed, a compaction's
folded messages go into the archive key as ONE message whose ``additional_kwargs`` hold
them serialized as JSON (as the store itself would write them), zlib-compressed and
base64-encoded: loading the file validates one message and scans one opaque string per
compaction. Reading the archive (recall, ``get_all(include_archived=True)``, saving)
unpacks it; a request's ``get`` never does.

Only a store whose type is exactly ``SimpleChatStore`` is packed into (:func:`packs_into`):
a subclass, or any other store (Redis, PostgreSQL, SQLite, ``JsonlChatStore``, custom ones),
keeps one entry per message. Packed entries are recognised in any ``SimpleChatStore``,
subclasses too (one may load a file the default wrote), and in no other store. Old
archives (one entry per message) read as before, also followed by packed entries.

An entry is recognised strictly — no blocks (no text), the ``system`` role, and
``additional_kwargs`` exactly ``{PACK_KEY: {"v", "codec", "n", "size", "data"}}`` of the
right types — so no message text can pass for one; an entry that only resembles it is an
ordinary message. A recognised entry that does not decode (bad base64 or zlib data,
more than its declared size — a cap against decompression bombs —, not the declared
count of valid messages) raises :class:`~window_budget.errors.StoreError` naming the key
and the entry's index; the store is left as it is. Unpacking goes one level deep: a
message inside a pack that looks like a pack is returned as it was put.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Iterator, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.storage.chat_store import BaseChatStore, SimpleChatStore
from pydantic import TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from window_budget.errors import StoreError

__all__ = ["MAX_PACK_BYTES", "PACK_KEY", "is_packed", "pack", "packs_into", "unpack"]

PACK_KEY = "window_budget_archive_pack"
"""The one ``additional_kwargs`` key of a packed archive entry."""
MAX_PACK_BYTES = 32 * 1024 * 1024
"""Most JSON bytes one entry holds, and unpacks to (a larger message stays unpacked)."""
_VERSION = 1
_CODEC = "zlib"
_FIELDS = {"v": int, "codec": str, "n": int, "size": int, "data": str}
_LEVEL = 6
"""zlib's default. A compaction's messages of real console logs: 2.9x smaller, base64
included; level 9 gains under 1 %, lzma 5 % for 8x the time and 4x the time to unpack."""

_ONE = TypeAdapter(ChatMessage)
_MANY = TypeAdapter(list[ChatMessage])


def packs_into(store: BaseChatStore) -> bool:
    """True for the store the memory packs its archive into: exactly ``SimpleChatStore``.

    The exact type, not ``isinstance``: a subclass may keep its messages elsewhere (one
    row or document per message, searched or indexed) where a packed entry would hide
    them; it keeps the one-entry-per-message layout, as every other store does.
    """
    return type(store) is SimpleChatStore


def _same(a: ChatMessage, b: ChatMessage) -> bool:
    return a == b or a.model_dump(mode="json") == b.model_dump(mode="json")


def _entry(raw: bytes, count: int) -> ChatMessage:
    data = base64.b64encode(zlib.compress(raw, _LEVEL)).decode("ascii")
    fields = {"v": _VERSION, "codec": _CODEC, "n": count, "size": len(raw), "data": data}
    return ChatMessage(role=MessageRole.SYSTEM, additional_kwargs={PACK_KEY: fields})


def _joined(raws: Sequence[bytes]) -> bytes:
    return b"[" + b",".join(raws) + b"]"


def _round_trips(messages: Sequence[ChatMessage], raw: bytes) -> bool:
    """True when ``raw`` validates back to ``messages`` (as the store's own load would)."""
    try:
        back = _MANY.validate_json(raw)
    except Exception:  # a model validator may raise anything: the message stays unpacked
        return False
    # Not the same: e.g. a legacy ``images`` kwarg, turned into blocks on every load.
    return len(back) == len(messages) and all(map(_same, back, messages))


def _dumped(message: ChatMessage) -> bytes | None:
    try:
        return _ONE.dump_json(message)
    except (PydanticSerializationError, ValueError, TypeError):
        return None  # not JSON: kept as given, as the store itself keeps it


def _chunks(
    messages: Sequence[ChatMessage], raws: Sequence[bytes]
) -> Iterator[tuple[list[ChatMessage], list[bytes]]]:
    chunk: list[ChatMessage] = []
    chunk_raws: list[bytes] = []
    total = 0
    for m, raw in zip(messages, raws, strict=True):
        if chunk and total + len(raw) + 2 > MAX_PACK_BYTES:
            yield chunk, chunk_raws
            chunk, chunk_raws, total = [], [], 0
        chunk.append(m)
        chunk_raws.append(raw)
        total += len(raw) + 1
    if chunk:
        yield chunk, chunk_raws


def pack(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The archive entries for ``messages``, in order: packed wherever they round-trip.

    Runs of messages go into entries of at most :data:`MAX_PACK_BYTES` of JSON. A message
    that does not serialize to JSON, or does not validate back to itself, is kept as its
    own ordinary entry (what the one-entry-per-message layout stores), so nothing folded
    is lost or changed by packing.
    """
    out: list[ChatMessage] = []
    run: list[ChatMessage] = []
    raws: list[bytes] = []

    def flush() -> None:
        for chunk, chunk_raws in _chunks(run, raws):
            raw = _joined(chunk_raws)
            if _round_trips(chunk, raw):
                out.append(_entry(raw, len(chunk)))
                continue
            good: list[int] = []  # find the ones that differ; pack the runs between them
            for i, (m, one) in enumerate(zip(chunk, chunk_raws, strict=True)):
                if _round_trips([m], _joined([one])):
                    good.append(i)
                    continue
                if good:
                    out.append(_entry(_joined([chunk_raws[g] for g in good]), len(good)))
                    good = []
                out.append(m)
            if good:
                out.append(_entry(_joined([chunk_raws[g] for g in good]), len(good)))
        run.clear()
        raws.clear()

    for m in messages:
        raw = _dumped(m)
        if raw is None or len(raw) + 2 > MAX_PACK_BYTES:
            flush()
            out.append(m)
        else:
            run.append(m)
            raws.append(raw)
    flush()
    return out


def _fields(message: ChatMessage) -> dict[str, Any] | None:
    kwargs = message.additional_kwargs
    if message.blocks or message.role != MessageRole.SYSTEM or len(kwargs) != 1:
        return None
    fields = kwargs.get(PACK_KEY)
    if not isinstance(fields, dict) or fields.keys() != _FIELDS.keys():
        return None
    if not all(type(fields[name]) is kind for name, kind in _FIELDS.items()):
        return None
    return fields


def is_packed(message: ChatMessage) -> bool:
    """True when ``message`` has the exact shape of a packed archive entry."""
    return _fields(message) is not None


def _decoded(fields: dict[str, Any]) -> list[ChatMessage]:
    """The messages of one entry's fields; ``ValueError`` saying why not."""
    if fields["v"] != _VERSION or fields["codec"] != _CODEC:
        raise ValueError(
            f"version {fields['v']} / codec {fields['codec']!r}, this release reads "
            f"{_VERSION} / {_CODEC!r}: upgrade llama-index-memory-window-budget"
        )
    size, count = fields["size"], fields["n"]
    if not 0 < size <= MAX_PACK_BYTES or count < 1:
        raise ValueError(f"declared size {size} bytes / {count} messages out of range")
    try:
        compressed = base64.b64decode(fields["data"], validate=True)
        inflate = zlib.decompressobj()
        raw = inflate.decompress(compressed, size + 1)  # never more than declared
        if len(raw) > size or inflate.unconsumed_tail:
            raise ValueError(f"unpacks to more than its declared {size} bytes")
        if not inflate.eof:
            raise ValueError("its compressed data is cut short")
    except (binascii.Error, zlib.error) as exc:
        raise ValueError(f"its data is not base64 of zlib data ({exc})") from None
    if len(raw) != size:
        raise ValueError(f"unpacks to {len(raw)} bytes, declared {size}")
    try:
        messages = _MANY.validate_json(raw)
    except ValidationError as exc:
        raise ValueError(
            f"its JSON is not a list of chat messages ({exc.error_count()} errors)"
        ) from None
    except Exception as exc:  # a model validator of hostile data may raise anything
        raise ValueError(f"its messages do not validate ({type(exc).__name__})") from None
    if len(messages) != count:
        raise ValueError(f"holds {len(messages)} messages, declared {count}")
    return messages


def unpack(store: BaseChatStore, key: str, entries: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The archived messages of ``entries`` (read from ``key`` of ``store``), in order.

    Packed entries of a ``SimpleChatStore`` (or subclass) are expanded; every other entry,
    and every entry of any other store, is returned as it is.

    Raises:
        StoreError: a packed entry does not decode; names the store, key and entry.

    """
    if not isinstance(store, SimpleChatStore):
        return list(entries)
    out: list[ChatMessage] = []
    for index, entry in enumerate(entries):
        fields = _fields(entry)
        if fields is None:
            out.append(entry)
            continue
        try:
            out.extend(_decoded(fields))
        except ValueError as exc:
            raise StoreError(
                f"entry {index} under key {key!r} of the {type(store).__name__} is a packed "
                f"window-budget archive entry that does not decode: {exc}. Nothing was "
                f"changed; restore the store's file from a backup, or drop that entry "
                f"(store.delete_message({key!r}, {index})) and the archived messages it held"
            ) from None
    return out
