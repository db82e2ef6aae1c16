"""Digest records in transcript files: what a writer keeps beside a digest, what a reader honours.

The JSON-native formats (``json``, pi's ``message`` lines) keep a digest as
``message_to_dict`` writes it; the others keep the adapters' record under :data:`DIGEST_KEY`.
With ``$WINDOW_BUDGET_SECRET`` set, either counts only when this library sealed it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any, Final

from window_budget.digest import (
    RECORD_KEY,
    SECRET_ENV,
    digest_from_record,
    digest_record,
    verified_record,
)
from window_budget.messages import (
    AgentMessage,
    Content,
    DigestMessage,
    UserMessage,
    content_text,
    message_to_dict,
)

__all__ = [
    "DIGEST_KEY",
    "digest_from_info",
    "digest_info",
    "find_digest_record",
    "honoured",
    "sealed_dict",
]

SEAL_KEY: Final = "seal"
"""Where a JSON-native record keeps the digest's seal, beside its fields."""


DIGEST_KEY: Final = RECORD_KEY
"""Key under which a writer stores a digest's record in a format's free-form metadata: the
same record, under the same key, that the LangChain and LlamaIndex adapters write."""


def find_digest_record(metadata: object) -> Mapping[str, Any] | None:
    """The digest record in a format's free-form metadata, or None.

    Only a record this library sealed counts (``bridge.verified_record``): a forged or
    edited one, or one written by another process without a shared secret, is no digest.
    """
    if not isinstance(metadata, Mapping):
        return None
    return verified_record(metadata.get(DIGEST_KEY))


def digest_info(msg: AgentMessage) -> dict[str, Any] | None:
    """A :class:`DigestMessage`'s record as JSON, for a writer to keep next to its text."""
    return digest_record(msg) if isinstance(msg, DigestMessage) else None


def digest_from_info(
    content: Content, info: Any, *, timestamp: float | None = None
) -> DigestMessage | None:
    """The inverse of :func:`digest_info` (None when ``info`` is not such a record).

    Restoring ``kept_count`` matters: the usage figures on the turns kept with the digest
    measured the longer transcript, and must not anchor the estimate once read back.
    """
    if not isinstance(info, Mapping):
        return None
    if os.environ.get(SECRET_ENV) and verified_record(info, content_text(content)) is None:
        return None
    digest = digest_from_record(content, info)
    return dataclasses.replace(digest, timestamp=timestamp) if timestamp is not None else digest


def sealed_dict(message: AgentMessage) -> dict[str, Any]:
    """``message_to_dict(message)``, a digest's fields sealed (see :func:`honoured`)."""
    out = message_to_dict(message)
    if isinstance(message, DigestMessage) and isinstance(out.get("digest"), dict):
        out["digest"][SEAL_KEY] = digest_record(message)["seal"]
    return out


def honoured(message: AgentMessage, raw: object) -> AgentMessage:
    """``message`` as read from ``raw``; with a secret set, an unsealed digest is a user turn.

    The seal is recomputed over the digest as read, so a record whose text, counts or ledger
    were edited (or forged whole) no longer matches it.
    """
    if not isinstance(message, DigestMessage) or not os.environ.get(SECRET_ENV):
        return message
    info = raw.get("digest") if isinstance(raw, Mapping) else None
    seal = info.get(SEAL_KEY) if isinstance(info, Mapping) else None
    if seal is not None and seal == digest_record(message)["seal"]:
        return message
    return UserMessage(message.content, timestamp=message.timestamp)
