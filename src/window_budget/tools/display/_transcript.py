"""A transcript read from a file, as plain lines and as HTML."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from window_budget.budget import estimate_message_tokens, message_parts
from window_budget.messages import (
    AgentMessage,
    BashExecutionMessage,
    ToolResultMessage,
    message_text,
    tool_calls,
)
from window_budget.tools.display._html import (
    MAX_ROWS,
    MAX_SEGMENTS,
    PREVIEW_CHARS,
    bar,
    box,
    legend,
    role_colour,
    role_of,
    safe_text,
    table,
)

if TYPE_CHECKING:
    from window_budget.readers import Transcript

__all__ = ["transcript_html", "transcript_text"]


def _shape(messages: Sequence[AgentMessage]) -> tuple[Counter[str], Counter[str], int, int, int]:
    roles: Counter[str] = Counter(role_of(m) for m in messages)
    tools: Counter[str] = Counter(c.name for m in messages for c in tool_calls(m))
    errors = sum(1 for m in messages if isinstance(m, ToolResultMessage) and m.is_error)
    images = sum(message_parts(m)[2] for m in messages)
    turns = sum(1 for m in messages if role_of(m) == "user")
    return roles, tools, errors, images, turns


def transcript_text(transcript: Transcript) -> str:
    """A transcript at a glance, in plain lines: where from, turns, roles, tool calls."""
    roles, tools, errors, images, turns = _shape(transcript.messages)
    lines = [
        f"transcript ({transcript.format}) {transcript.path or '<stream>'}: "
        f"{len(transcript.messages):,} messages, {turns:,} user turns, "
        f"{len(transcript.system)} system prompt(s)",
        "roles: " + (", ".join(f"{r} {n:,}" for r, n in roles.most_common()) or "none"),
        f"tool calls: {sum(tools.values()):,} ({errors:,} failed results)"
        + ("; " + ", ".join(f"{t} {n:,}" for t, n in tools.most_common(8)) if tools else ""),
        f"images: {images:,}",
    ]
    usage = transcript.reported_usage
    if usage is not None:
        lines.append(f"provider reported: {usage.context_tokens:,} tokens at the last reply")
    if transcript.skipped:
        lines.append(f"skipped bad records: {len(transcript.skipped):,}")
    return "\n".join(lines)


def _preview(message: AgentMessage) -> str:
    if isinstance(message, BashExecutionMessage):
        return f"$ {message.command}"
    text = message_text(message).strip()
    if not text and tool_calls(message):
        text = "(tool calls only)"
    return " ".join(text.split())


def _strip_segments(
    messages: Sequence[AgentMessage], sizes: Sequence[int]
) -> list[tuple[str, float, str]]:
    """One segment a message; past :data:`MAX_SEGMENTS`, runs of messages share one.

    A shared segment takes the colour of the role with the most tokens in it, so a
    session of thousands of messages still draws as a bounded strip.
    """
    n = len(messages)
    step = max(1, -(-n // MAX_SEGMENTS))
    out = []
    for start in range(0, n, step):
        chunk = range(start, min(n, start + step))
        by_role: Counter[str] = Counter()
        for i in chunk:
            by_role[role_of(messages[i])] += sizes[i]
        role = max(by_role, key=lambda r: by_role[r])
        tokens = float(sum(sizes[i] for i in chunk))
        if step == 1:
            label = f"#{start + 1} {role} — {_preview(messages[start])[:80]}"
        else:
            label = f"#{chunk[0] + 1}–#{chunk[-1] + 1}, mostly {role}"
        out.append((label, tokens, role_colour(role)))
    return out


def transcript_html(transcript: Transcript) -> str:
    """A transcript as HTML: a strip of its messages by role, counts, and the first rows.

    Each message is one slice of the strip (width by tokens; hover shows its start).
    The table lists at most :data:`MAX_ROWS` messages, head and tail, and says how many
    it left out.
    """
    messages = transcript.messages
    roles, tools, errors, images, turns = _shape(messages)
    sizes = [estimate_message_tokens(m) for m in messages]
    total = sum(sizes)
    strip = bar(_strip_segments(messages, sizes), max(total, 1))
    where = safe_text(transcript.path or "<stream>", 200)
    body = (
        f"<div><code>{where}</code> · {safe_text(transcript.format)} · "
        f"<b>{len(messages):,}</b> messages · <b>{turns:,}</b> user turns · "
        f"about {total:,} tokens · {len(transcript.system)} system prompt(s)</div>"
    )
    body += strip + legend((f"{r} {n:,}", role_colour(r)) for r, n in roles.most_common())
    tool_list = ", ".join(f"{safe_text(t, 60)} ×{n:,}" for t, n in tools.most_common(10))
    body += (
        f'<div style="margin-top:4px">tool calls: <b>{sum(tools.values()):,}</b>'
        f" ({errors:,} failed results){': ' + tool_list if tool_list else ''}"
        f" · images: <b>{images:,}</b></div>"
    )
    usage = transcript.reported_usage
    if usage is not None:
        body += (
            f"<div>provider reported <b>{usage.context_tokens:,}</b> tokens at the last "
            f"reply (model {safe_text(transcript.model or 'unknown', 80)})</div>"
        )
    if transcript.skipped:
        body += f"<div>skipped bad records: {len(transcript.skipped):,}</div>"
    indexes = list(range(len(messages)))
    if len(indexes) > MAX_ROWS:
        half = MAX_ROWS // 2
        indexes = [*indexes[:half], -1, *indexes[-half:]]
    rows = []
    for i in indexes:
        if i < 0:
            rows.append(("…", "", "", f"<i>{len(messages) - MAX_ROWS:,} messages not listed</i>"))
            continue
        m = messages[i]
        role = role_of(m)
        calls = ", ".join(c.name for c in tool_calls(m))
        chip = (
            f'<span style="color:{role_colour(role)};font-weight:600">{safe_text(role)}</span>'
            + (" ⚠" if isinstance(m, ToolResultMessage) and m.is_error else "")
        )
        text = safe_text(_preview(m), PREVIEW_CHARS)
        if calls:
            text += f' <span style="color:#888">→ {safe_text(calls, 120)}</span>'
        rows.append((str(i + 1), chip, f"{sizes[i]:,}", text))
    body += (
        "<details><summary>messages</summary>"
        + table(["#", "role", "tokens", "start"], rows)
        + "</details>"
    )
    return box("window-budget · transcript", body)
