"""Seals on digest records: the library honours a record only if it wrote it.

A digest record travels inside framework messages (``additional_kwargs``), which a client,
a checkpoint or a file can carry and anyone can edit. The record's fields that steer the
next compaction (the text, the counts, the ledger or the pointer into the store) are sealed
with an HMAC under a secret the client never sees: the memory store's own key, or this
process's key when there is no store. A record whose seal does not verify is an ordinary
message of its role.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["PROCESS_KEY", "make_seal", "seal_matches"]

PROCESS_KEY: Final = secrets.token_bytes(32)
"""The key of records sealed without a store: they are honoured within this process only."""


def _canonical(fields: Mapping[str, Any]) -> bytes:
    return json.dumps(
        fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    ).encode("utf-8", "surrogatepass")


def make_seal(key: bytes, fields: Mapping[str, Any]) -> str:
    """The seal of ``fields`` (JSON-safe) under ``key``, as hex."""
    return hmac.new(key, _canonical(fields), hashlib.sha256).hexdigest()


def seal_matches(key: bytes, fields: Mapping[str, Any], seal: object) -> bool:
    """True when ``seal`` is the seal of ``fields`` under ``key`` (constant time)."""
    return isinstance(seal, str) and hmac.compare_digest(make_seal(key, fields), seal)
