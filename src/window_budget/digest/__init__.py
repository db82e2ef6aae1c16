"""The digest: its headers, how to recognise one, and the sealed record it carries.

A digest is recognised by type (:func:`is_digest`), never by its header text alone: anyone can
type the header. Inside a framework message it carries a record (:func:`digest_record`) that
the library seals and honours only when the seal verifies (:func:`verified_record`).
"""

from window_budget.digest._headers import (
    BRANCH_HEADER,
    DIGEST_HEADERS,
    SESSION_HEADER,
    digest_body,
    is_digest,
)
from window_budget.digest._record import RECORD_KEY, SECRET_ENV, digest_record, resealed
from window_budget.digest._record import SEAL_FIELD as SEAL_FIELD
from window_budget.digest._record import TEXT_FIELD as TEXT_FIELD
from window_budget.digest._record import digest_from_record as digest_from_record
from window_budget.digest._record import digest_of as digest_of
from window_budget.digest._record import head_counts as head_counts
from window_budget.digest._record import read_digest_record as read_digest_record
from window_budget.digest._record import record_key as record_key
from window_budget.digest._record import verified_record as verified_record
from window_budget.digest._seal import PROCESS_KEY as PROCESS_KEY
from window_budget.digest._seal import make_seal as make_seal
from window_budget.digest._seal import seal_matches as seal_matches

__all__ = [
    "BRANCH_HEADER",
    "DIGEST_HEADERS",
    "RECORD_KEY",
    "SECRET_ENV",
    "SESSION_HEADER",
    "digest_body",
    "digest_record",
    "is_digest",
    "resealed",
]
