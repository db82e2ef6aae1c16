"""How an archived original reads: who it is from (names quoted) and its text."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from window_budget.messages import (
    AssistantMessage,
    BashExecutionMessage,
    CustomMessage,
    ToolResultMessage,
    UserMessage,
    message_from_dict,
    message_text,
)

__all__ = ["archived_text", "clean"]

_TAG_RE = re.compile(r"<(?=\s*/?\s*recalled)", re.IGNORECASE)


def clean(text: str) -> str:
    out = []
    for char in text:
        if char in "\n\t":
            out.append(char)
        elif unicodedata.category(char) in ("Cc", "Cf") or char in "\u2028\u2029":
            out.append(" " if char in "\r\u2028\u2029\x85" else "")
        else:
            out.append(char)
    return _TAG_RE.sub("&lt;", "".join(out))


def _name(value: object) -> str:
    """A name from the archive (a tool's, a note's type) as quoted data on one line."""
    text = " ".join(clean(str(value)).split())
    return json.dumps(text[:80] + ("…" if len(text) > 80 else ""), ensure_ascii=False)


def archived_text(raw: Mapping[str, Any]) -> tuple[str, str]:
    """Who an archived message is from (names quoted: they are data), and its text."""
    try:
        message = message_from_dict(raw)
    except (ValueError, TypeError, KeyError):
        return f"unknown {_name(raw.get('role', ''))}", str(raw.get("content", ""))
    text = message_text(message)
    match message:
        case ToolResultMessage():
            error = " (error)" if message.is_error else ""
            return f"tool {_name(message.tool_name)}{error}", text
        case BashExecutionMessage():
            return f"shell (exit {message.exit_code})", text
        case CustomMessage():
            return f"note {_name(message.custom_type)} (not the user)", text
        case UserMessage():
            return "user", text
        case AssistantMessage():
            calls = [f"call {c.name} {json.dumps(dict(c.arguments))}" for c in message.tool_calls]
            return "assistant", "\n".join([text, *calls]).strip()
    return f"message {_name(getattr(message, 'role', ''))}", text
