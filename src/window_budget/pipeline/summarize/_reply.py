"""The summarizer's reply: its text, read defensively from whatever the completer returned."""

from __future__ import annotations

import inspect

from window_budget.messages import AssistantMessage, TextBlock

__all__ = ["reply_text"]

# A reply this long is not an overlong digest but junk (a dumped prompt, a runaway loop):
# cutting it would keep garbage and counting it costs seconds, so fall back instead.
_JUNK_REPLY_CHARS = 1_000_000


def reply_text(reply: object, max_tokens: int) -> tuple[str | None, str]:
    """Text of a completer's reply, or None and why it cannot be used.

    Defensive on purpose: the reply comes from user code and a provider, so a message
    built around its own validation (``object.__setattr__``) or an object of another
    type is reported, never crashed on.
    """
    if isinstance(reply, AssistantMessage):
        if reply.stop_reason == "error":
            return None, "reply held no text"
        content: object = reply.content
        if isinstance(content, str):
            text = content
        elif isinstance(content, tuple | list):
            texts = [getattr(b, "text", None) for b in content if isinstance(b, TextBlock)]
            if not all(isinstance(t, str) for t in texts):
                return None, "reply held a text block whose text is not a str"
            text = "\n".join(texts)  # type: ignore[arg-type]
        else:
            return None, f"reply content is a {type(content).__name__}, not text or blocks"
    elif isinstance(reply, str):
        text = reply
    else:
        if inspect.isawaitable(reply):
            close = getattr(reply, "close", None)
            if callable(close):
                close()  # never awaited: closing it spares a "never awaited" warning
            return None, (
                "the sync completer returned an awaitable; pass an async function "
                "as complete= instead"
            )
        return None, f"reply is a {type(reply).__name__}, not an AssistantMessage or str"
    if len(text) > max(_JUNK_REPLY_CHARS, max_tokens * 64):
        return None, (
            f"reply of {len(text):,} characters is far beyond the {max_tokens:,} tokens asked for"
        )
    if not text.strip():
        return None, "empty reply"
    return text, ""
