"""The summarizer's reply: its text, and what of it is the model's own.

Small models do not always write a digest. Measured with 0.5B and 1.5B instruct models over
real sessions, replies restated the template's heading descriptions, copied the carried
digest and its ``# Pinned facts`` back (a ``</carried-digest>`` line included), came wrapped
in thinking tags, chat-template tokens or a fence, and named paths that are near misses of
real ones (``annotation.exs`` for ``annotation.ex``).

- :func:`clean_reply` strips what wraps the model's prose (thinking blocks, chat-template
  tokens, a surrounding fence, the prompt's tags, any ``Pinned facts`` section: that heading
  is the audit's) and drops lines echoed from the prompt; it fails a reply that is mostly
  the prompt's own lines or has nothing of its own left, so the network-free digest stands in.
- :func:`own_prose` blanks the lines copied from the carried digest, so the audit counts
  only what the model wrote itself.

Lines are compared one by one with the prompt that was sent (:class:`SentPrompt`), not with
a fixed list of phrases. The paths a model made up are ``_invented``'s.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from window_budget.messages import AssistantMessage, TextBlock

__all__ = [
    "CleanReply",
    "SentPrompt",
    "clean_reply",
    "drop_pins_sections",
    "own_prose",
    "reply_text",
]

# A reply this long is not an overlong digest but junk (a dumped prompt, a runaway loop):
# cutting it would keep garbage and counting it costs seconds, so fall back instead.
_JUNK_REPLY_CHARS = 1_000_000
_ECHO_MIN_CHARS: Final = 12  # shorter lines ("none", "Shipped") say too little to be an echo


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


@dataclass(frozen=True, slots=True)
class SentPrompt:
    """What one summary call showed the model, to tell its own lines from what it echoed."""

    instructions: str
    """The prompt's own words: the brief, the framing line and the template."""
    scrollback: str = ""
    """The flattened turns the call showed."""
    carried: str = ""
    """The carried digest as the flow sent it (the previous compaction's, pins included)."""


@dataclass(frozen=True, slots=True)
class CleanReply:
    """A reply cleaned of what it wrapped or echoed, or why nothing usable was left."""

    text: str | None
    """The model's digest without the markup and echoes; None when nothing usable is left."""
    why: str = ""
    """Why the reply failed (empty when ``text`` is usable)."""
    removed: tuple[str, ...] = ()
    """What was taken out (for the log): a thinking block, a fence, prompt tags, ..."""


# ------------------------------------------------------------------------ markup

_SPECIAL_TOKEN_RE = re.compile(r"<[|｜][^<>\n]{1,40}?[|｜]>")
_ROLE_RE = re.compile(r"\A\s*(system|user|assistant|tool)[ \t]*(?:\n|\Z)", re.IGNORECASE)
_THINK = r"think|thinking|thought|reasoning"
_THINK_OPEN_RE = re.compile(rf"<\s*(?:{_THINK})\b[^<>]*>", re.IGNORECASE)
_THINK_CLOSE_RE = re.compile(rf"<\s*/\s*(?:{_THINK})\s*>", re.IGNORECASE)
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)\s*$")
_PROMPT_TAG_RE = re.compile(r"<\s*/?\s*(?:scrollback|carried[-_ ]?digest)\s*/?\s*>", re.IGNORECASE)
_PINS_HEADING_RE = re.compile(  # "# Pinned facts (carried)", "**Pinned facts:**", "Pinned facts"
    r"^\s{0,3}(?:#{1,6}\s*pinned\s+facts\b.*|(?:\*\*|__)?\s*pinned\s+facts\s*:?\s*(?:\*\*|__)?:?)\s*$",
    re.IGNORECASE,
)
_HEADING_RE = re.compile(r"^\s{0,3}(?:#{1,6}\s|(?:\*\*|__)[^*_]+(?:\*\*|__):?\s*$)")


def _strip_chat_tokens(text: str) -> tuple[str, bool]:
    """The reply without chat-template tokens (``<|im_start|>assistant``, ``<|im_end|>``).

    A reply that runs on into another turn keeps the assistant's turn (the last one, when
    the model replayed the whole chat) or else its first part.
    """
    if not _SPECIAL_TOKEN_RE.search(text):
        return text, False
    turns: list[tuple[str, str]] = []
    pending = ""
    for piece in _SPECIAL_TOKEN_RE.split(text):
        role = _ROLE_RE.match(piece)
        body = piece[role.end() :] if role else piece
        if not body.strip():
            pending = role.group(1).lower() if role else pending
            continue
        turns.append((role.group(1).lower() if role else pending, body))
        pending = ""
    assistant = [body for who, body in turns if who == "assistant"]
    plain = [body for who, body in turns if not who]
    chosen = assistant[-1] if assistant else plain[0] if plain else turns[0][1] if turns else ""
    return chosen.strip(), True


def _strip_thinking(text: str) -> tuple[str, bool]:
    """The reply without its thinking.

    Whole blocks go, so does what ends at an orphan closing tag (the opening one was in the
    chat template) and everything after an opening tag that never closes (a reply cut off
    mid-thought).
    """
    kept: list[str] = []
    pos = 0
    while (opening := _THINK_OPEN_RE.search(text, pos)) is not None:
        kept.append(text[pos : opening.start()])
        closing = _THINK_CLOSE_RE.search(text, opening.end())
        pos = len(text) if closing is None else closing.end()
    out = "".join(kept) + text[pos:]
    closes = list(_THINK_CLOSE_RE.finditer(out))
    if closes:
        out = out[closes[-1].end() :]
    return out, out != text


def _unfence(text: str) -> tuple[str, bool]:
    """The reply without a fence around all of it (a line ending with ``:`` may precede it).

    A fence that opens the reply but closes before its end is a code block, not a wrapper;
    one that never closes wraps a reply cut off at its end.
    """
    lines = text.strip().split("\n")
    if len(lines) > 1 and lines[0].rstrip().endswith(":") and _FENCE_RE.match(lines[1]):
        lines = lines[1:]  # "Here is the digest:" before the fence
    first = _FENCE_RE.match(lines[0])
    if first is None:
        return text, False
    mark, depth, end = first.group(1)[0], 0, len(lines)
    for i, line in enumerate(lines[1:], 1):
        fence = _FENCE_RE.match(line)
        if fence is None or fence.group(1)[0] != mark:
            continue
        if fence.group(2):
            depth += 1
        elif depth:
            depth -= 1
        else:
            end = i
            break
    if any(line.strip() for line in lines[end + 1 :]):
        return text, False
    return "\n".join(lines[1:end]), True


def drop_pins_sections(text: str) -> tuple[str, int]:
    """``text`` without its ``Pinned facts`` sections, and how many there were.

    A section is its heading (any level, bold or plain, any case) and the bullet, indented
    and blank lines after it; the first other line ends it. The heading belongs to the audit,
    which appends one section of its own: a model's is a copy of the carried digest's.
    """
    if "pinned" not in text.lower():
        return text, 0
    out: list[str] = []
    sections = 0
    inside = False
    for line in text.split("\n"):
        if _PINS_HEADING_RE.match(line):
            sections += 1
            inside = True
            continue
        if inside and (not line.strip() or line[:1] in " \t" or line.lstrip()[:2] in _BULLETS):
            continue
        inside = False
        out.append(line)
    return "\n".join(out).strip() if sections else text, sections


_BULLETS: Final = frozenset({"- ", "* ", "+ ", "• "})


_LOOP_RE = re.compile(r"(.{24,}?)(?:\s*\1){2,}")
_LOOP_LINE_CHARS = 4000  # the search is quadratic in a line's length


def _once(match: re.Match[str]) -> str:
    # A phrase of several words looped; a run of one character ("xxxx", "====") is not.
    unit = match.group(1)
    return unit if len(set(unit.split())) >= 3 else match.group(0)


def _unloop(text: str) -> tuple[str, bool]:
    """A small model's repetition loop, kept once.

    A phrase written three or more times in a row within a line, or a line repeated
    anywhere in the reply (Qwen2.5-Coder 1.5B wrote one sentence 21 times).
    """
    seen: set[str] = set()
    lines = []
    for raw in text.split("\n"):
        line = _LOOP_RE.sub(_once, raw) if len(raw) <= _LOOP_LINE_CHARS else raw
        key = _line_key(line)
        if key and len(key) >= 24 and key in seen:
            continue
        seen.add(key)
        lines.append(line)
    out = "\n".join(lines)
    return out, out != text


def _drop_prompt_tags(text: str) -> tuple[str, bool]:
    if not _PROMPT_TAG_RE.search(text):
        return text, False
    lines = [_PROMPT_TAG_RE.sub("", line) for line in text.split("\n")]
    kept = [
        line
        for line, was in zip(lines, text.split("\n"), strict=True)
        if line.strip() or not was.strip()
    ]
    return "\n".join(kept), True


# ------------------------------------------------------------------ line overlap

_LIST_MARK_RE = re.compile(r"^(?:[-*+•>]|\d{1,3}[.)]|\[[ xX]\])\s+")
_TRIVIAL: Final = frozenset(
    {"none", "n/a", "na", "nothing", "tbd", "-", "…", "...", "none yet", "nothing yet"}
    | {"none so far", "none recorded", "none reported", "nothing to report", "no", "empty"}
)


def _line_key(line: str) -> str:
    """A line as compared: no list marks, emphasis or backticks, case folded, spaces single."""
    text = line.strip()
    while (mark := _LIST_MARK_RE.match(text)) is not None:
        text = text[mark.end() :]
    text = text.replace("`", "").replace("**", "").replace("__", "")
    return " ".join(text.casefold().split()).rstrip(" .:;,!")


def _keys(text: str) -> set[str]:
    return {k for line in text.split("\n") if not _HEADING_RE.match(line) if (k := _line_key(line))}


def _is_content(line: str) -> bool:
    """A line that says something: not blank, not a heading, not "none"."""
    return bool(line.strip()) and not _HEADING_RE.match(line) and _line_key(line) not in _TRIVIAL


def _echoes(key: str, line: str, instructions: Sequence[str], scrollback: set[str]) -> bool:
    """True when a line restates the prompt.

    That is: part of one of its instruction lines, or one of them with little added, or a
    scrollback entry copied with its ``»`` mark.
    """
    if line.lstrip().startswith("»"):
        return key in scrollback
    if len(key) < _ECHO_MIN_CHARS:
        return False
    return any(
        key in said
        or (len(said) >= _ECHO_MIN_CHARS and said in key and len(said) * 5 >= len(key) * 3)
        for said in instructions
    )


def own_prose(text: str, carried: str) -> str:
    """``text`` with the lines copied from ``carried`` blanked (line structure kept).

    A line is copied when it reads the same as a line of the carried digest once list
    marks, emphasis, backticks, case and spacing are set aside; headings and "none" stay.
    """
    if not carried.strip():
        return text
    copied = _keys(carried)
    return "\n".join(
        "" if _is_content(line) and _line_key(line) in copied else line for line in text.split("\n")
    )


def clean_reply(text: str, sent: SentPrompt) -> CleanReply:
    """``text`` without what wraps or echoes the prompt, or why nothing usable is left.

    Cleaned: thinking blocks, chat-template tokens, a fence around the whole reply, the
    prompt's ``<scrollback>`` / ``<carried-digest>`` tags (any case or spacing), any
    ``Pinned facts`` section, and lines echoed from the prompt. Failed: a reply that is
    nothing but that, only headings, mostly the prompt's own lines (the template's heading
    descriptions, the brief, the framing, the scrollback's entries), or nothing but lines
    copied from the carried digest. Lines copied from the carried digest stay when the model
    wrote lines of its own: merging it is the model's job, and the audit does not count them.
    """
    removed: list[str] = []
    for step, what in (
        (_strip_chat_tokens, "chat-template tokens"),
        (_strip_thinking, "a thinking block"),
        (_unfence, "a fence around the reply"),
        (_unloop, "a repetition loop"),
    ):
        text, changed = step(text)
        if changed:
            removed.append(what)
    text, sections = drop_pins_sections(text)
    if sections:
        removed.append(f"{sections} pinned-facts section{'s' if sections > 1 else ''}")
    text, tags = _drop_prompt_tags(text)  # after the pins: a tag line ends a pins section
    if tags:
        removed.append("the prompt's tags")
    lines = text.strip().split("\n")
    content = [i for i, line in enumerate(lines) if _is_content(line)]
    if not content:
        what = ", ".join(removed) if removed else "headings and 'none'"
        why = (
            "empty reply" if not text.strip() and not removed else f"reply held nothing but {what}"
        )
        return CleanReply(None, why, tuple(removed))
    instructions = sorted(_keys(sent.instructions.replace(". ", ".\n")) | _keys(sent.instructions))
    scrollback = _keys(sent.scrollback)
    copied = _keys(sent.carried)
    echo = {i for i in content if _echoes(_line_key(lines[i]), lines[i], instructions, scrollback)}
    copy = {i for i in content if i not in echo and _line_key(lines[i]) in copied}
    own = len(content) - len(echo) - len(copy)
    if 2 * len(echo) > len(content) or not own:
        if len(echo) >= len(copy):
            why = (
                f"reply echoed the prompt: {len(echo)} of {len(content)} lines are the "
                "prompt's own (its template, brief, framing or scrollback)"
            )
        else:
            why = (
                f"reply copied the carried digest: {len(copy)} of {len(content)} lines are "
                "the carried digest's, none the model's own"
            )
        return CleanReply(None, why, tuple(removed))
    if echo:
        removed.append(f"{len(echo)} line{'s' if len(echo) > 1 else ''} echoed from the prompt")
        lines = [line for i, line in enumerate(lines) if i not in echo]
    return CleanReply(re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip(), "", tuple(removed))
