"""The record a digest carries inside a framework message, sealed by the library that wrote it.

A framework digest message (a LangChain ``HumanMessage``, a LlamaIndex ``ChatMessage``, a
line of a transcript file) carries the core digest's fields under :data:`RECORD_KEY` in its
free-form metadata: the counts, the bounded ledger, the pointer into the memory store. Anyone
can write that metadata, so the record is sealed (an HMAC under :func:`record_key`, over the
record and a hash of the digest's text) and read back only when the seal verifies; anything
else is an ordinary message of its role. An adapter with a memory store passes the store's
key (``key=store.key``): records are then sealed with it and verified strictly, in every
process that shares the store.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import os
from collections.abc import Iterable, Mapping
from typing import Any, Final

from window_budget.digest._seal import PROCESS_KEY, make_seal, seal_matches
from window_budget.messages import Content, DigestMessage, UserMessage, content_text

__all__ = [
    "RECORD_KEY",
    "SEAL_FIELD",
    "SECRET_ENV",
    "TEXT_FIELD",
    "digest_from_record",
    "digest_of",
    "digest_record",
    "head_counts",
    "read_digest_record",
    "record_key",
    "resealed",
    "verified_record",
]

RECORD_KEY: Final = "window_budget"
"""The one key (under a message's ``additional_kwargs``) that holds a digest's record."""


_USER_FIELDS: Final = frozenset(f.name for f in dataclasses.fields(UserMessage))
_RECORD_NAMES: Final = {"covered_count": "covered", "kept_count": "kept"}
"""Record names of fields whose short names stored threads already use."""
_ALWAYS: Final = frozenset({"covered_count", "kept_count", "fallback"})
"""Fields always written; any other is written only when it differs from its default."""


def _digest_fields(kind: type[DigestMessage] = DigestMessage) -> list[dataclasses.Field[Any]]:
    """The fields a digest adds to a user message, in declaration order."""
    return [f for f in dataclasses.fields(kind) if f.init and f.name not in _USER_FIELDS]


def _count(value: object) -> int | None:
    """A stored count, or None when it is not a sane non-negative integer."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 0 <= value < 1 << 53:
        return value
    return None


def head_counts(records: Iterable[Mapping[str, Any] | None]) -> tuple[int, int]:
    """``(covered, compactions)`` for a new digest of a dropped head.

    ``records`` holds, per dropped message, its digest record (:func:`read_digest_record`)
    or None for any other message. An earlier digest stands for the originals it covered,
    wherever it sits in the head, any other message for itself; the new digest is one
    compaction more than the most any of them had been through. Both adapters count so,
    so their records agree.
    """
    covered = before = 0
    for record in records:
        if record is None:
            covered += 1
            continue
        covered += _count(record.get("covered")) or 0
        before = max(before, _count(record.get("compactions")) or 1)
    return covered, before + 1


SEAL_FIELD: Final = "seal"
"""The record's HMAC: only a record that verifies is read as a digest (see :func:`record_key`)."""
TEXT_FIELD: Final = "text_sha"
"""A hash of the digest's text, sealed with the record: the record does not fit other text."""
SECRET_ENV: Final = "WINDOW_BUDGET_SECRET"
"""Set it (the same value in every process) for digests to be honoured across processes."""


def record_key() -> bytes:
    """The key digest records are sealed with: ``$WINDOW_BUDGET_SECRET``, else this process's.

    Without the variable a digest written by another process (a restarted server, a file from
    elsewhere) reads as an ordinary message of its role, as a forged one does.
    """
    secret = os.environ.get(SECRET_ENV)
    return secret.encode("utf-8", "surrogatepass") if secret else PROCESS_KEY


def _text_sha(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _sealed(record: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != SEAL_FIELD}


def digest_record(
    digest: DigestMessage, *, key: bytes | None = None, **extra: Any
) -> dict[str, Any]:
    """The JSON-ready record a framework digest message carries under :data:`RECORD_KEY`.

    Every field :class:`DigestMessage` adds to a user message is written (iterated, not
    listed, so fields added later travel too; beyond the counts and ``fallback``, only
    when it differs from its default), then ``extra`` (adapter bookkeeping such as
    ``compactions`` or ``archive``). ``covered_count`` and ``kept_count`` are stored as
    ``covered`` and ``kept``. The record is sealed with ``key`` (a memory store's), else
    with :func:`record_key`.
    """
    record: dict[str, Any] = {"digest": True}
    for f in _digest_fields(type(digest)):
        value = getattr(digest, f.name)
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if f.name in _ALWAYS or value != default:
            record[_RECORD_NAMES.get(f.name, f.name)] = value
    record.update(extra)
    record[TEXT_FIELD] = _text_sha(content_text(digest.content))
    record[SEAL_FIELD] = make_seal(record_key() if key is None else key, _sealed(record))
    return record


def digest_of(text: str, source: object = None, **fields: Any) -> DigestMessage:
    """The core digest a native digest message stands for, with ``fields`` set.

    ``source`` is the core's own digest (``Summary.message``): when it is a
    :class:`DigestMessage` every field it has (a fact ledger, say) is kept; anything else
    gives a plain digest of ``text``. ``fields`` are the adapter's counts, e.g.
    ``covered_count``. The record the native message carries is
    ``digest_record(digest_of(...), **extra)``.
    """
    if not isinstance(source, DigestMessage):
        return DigestMessage(text, **fields)
    if content_text(source.content) != text:
        fields = {"content": text, **fields}  # the record is sealed over the text it sits on
    return dataclasses.replace(source, **fields) if fields else source


def verified_record(
    record: object, text: str | None = None, *, key: bytes | None = None
) -> dict[str, Any] | None:
    """``record`` as a new dict when it may be read as a digest's record, else None.

    Given ``key`` (a memory store's), only a record sealed under it counts, and, given
    ``text``, only for that text: a forged, edited, moved or foreign record is no digest.
    Without ``key`` the same holds under ``$WINDOW_BUDGET_SECRET`` when it is set. Without
    either, a record sealed under another process's key cannot be told from a forged one,
    and several workers share one store, so records are read as before (their counts still
    checked); set the secret, or use a memory store, wherever clients can write message
    metadata.
    """
    if not isinstance(record, Mapping) or record.get("digest") is not True:
        return None
    if key is not None or os.environ.get(SECRET_ENV):
        seal_key = record_key() if key is None else key
        if not seal_matches(seal_key, _sealed(record), record.get(SEAL_FIELD)):
            return None
        if text is not None and record.get(TEXT_FIELD) != _text_sha(text):
            return None
    return dict(record)


def resealed(record: object, text: str, old: bytes, new: bytes | None) -> dict[str, Any] | None:
    """``record`` sealed under ``new`` (None: :func:`record_key`), if it verifies under ``old``.

    For a memory restored from its own saved form into another store: the saved digests were
    sealed under the old store's key, which travels with them. Anything else gives None.
    """
    checked = verified_record(record, text, key=old)
    if checked is None:
        return None
    checked[SEAL_FIELD] = make_seal(record_key() if new is None else new, _sealed(checked))
    return checked


def read_digest_record(
    kwargs: Mapping[str, Any] | None, text: str | None = None, *, key: bytes | None = None
) -> dict[str, Any] | None:
    """The digest record in a message's ``additional_kwargs``, or None for other messages.

    Only a record sealed under ``key`` (the memory store's), else under :func:`record_key`,
    counts (:func:`verified_record`); pass the message's ``text`` to check the record belongs
    to it. A framework message's metadata is whatever a client sent, so this is strict even
    without a secret: a digest written by another process, without a shared store or
    ``$WINDOW_BUDGET_SECRET``, reads as an ordinary message of its role (its text is kept;
    a warning is logged once per process). Returns a new dict (the
    message is not touched).
    """
    if not kwargs:
        return None
    raw = kwargs.get(RECORD_KEY)
    record = verified_record(raw, text, key=record_key() if key is None else key)
    if record is None and _claims_digest(raw):
        _warn_unverified()
    return record


logger = logging.getLogger("window_budget.memory")
_warned: list[bool] = []


def _claims_digest(raw: object) -> bool:
    return isinstance(raw, Mapping) and raw.get("digest") is True


def _warn_unverified() -> None:
    """Log once per process: the first unverifiable record is news, the next ones are not."""
    if _warned:
        return
    _warned.append(True)
    logger.warning(
        "a message carries a digest record this process cannot verify (written by another "
        "process without a shared memory store or $%s, or forged): it is read as an ordinary "
        "message; set the same secret in every process to keep digests across them",
        SECRET_ENV,
    )


def digest_from_record(
    content: Content, record: Mapping[str, Any], *, kind: type[DigestMessage] = DigestMessage
) -> DigestMessage:
    """Rebuild the core's :class:`DigestMessage` from its text and a stored record.

    The inverse of :func:`digest_record`: each digest field is taken from the record when
    present. Counts that are not sane non-negative integers (a hand-edited or hostile
    record) fall back to their defaults rather than reaching the budget math.
    """
    values: dict[str, Any] = {}
    for f in _digest_fields(kind):
        name = _RECORD_NAMES.get(f.name, f.name)
        if name not in record:
            continue
        value = record[name]
        if f.name in _RECORD_NAMES:
            value = _count(value)
            if value is None:
                continue
        elif f.name == "fallback":
            value = value is True
        values[f.name] = value
    try:
        return kind(content, **values)
    except (TypeError, ValueError):
        counts = {k: v for k, v in values.items() if k in _RECORD_NAMES}
        return kind(content, **counts)
