"""Token estimates per message and per transcript, and the forward prefix sums the slicer searches.

The heuristic is ``ceil(text_tokens(parts)) + framing + images * 1024``: the largest of
a piece count, a character-class estimate and a character floor (see ``text_tokens``),
biased a fifth above cl100k_base, about what Claude counts, so the gate fires a little
early rather than letting a request overflow. A
:class:`~window_budget.contract.TokenCounter` replaces the text estimate with exact
counts; framing and the flat image rate still apply.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

from window_budget.contract import TokenCounter
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    Content,
    DigestMessage,
    ImageBlock,
    ProviderCompactionBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    json_text,
    message_kind,
    serialize_unknown,
)

__all__ = [
    "BLOCK_FRAMING_TOKENS",
    "CHARS_PER_TOKEN",
    "FLOOR_CHARS_PER_TOKEN",
    "IMAGE_TOKENS",
    "MESSAGE_FRAMING_TOKENS",
    "TOOL_FRAMING_TOKENS",
    "count_text",
    "estimate_message_tokens",
    "message_parts",
    "text_tokens",
]

CHARS_PER_TOKEN = 3.6
"""Characters per token of the plain character rule (some engines use 4)."""
FLOOR_CHARS_PER_TOKEN = 5.0
"""Characters per token below which the heuristic never goes, whatever the text."""
IMAGE_TOKENS = 1024
"""Flat cost of one image, whatever its resolution."""
MESSAGE_FRAMING_TOKENS = 4
"""Role and separators a provider wraps around each message."""
BLOCK_FRAMING_TOKENS = 2
"""Per content block: type tags and separators."""
TOOL_FRAMING_TOKENS = 3
"""More per tool call and per tool result: the tags, id and name fields around them."""


def _argument_parts(arguments: object, parts: list[str]) -> None:
    """Append a tool call's argument names and values.

    Providers bill a call's arguments as their values (a file written is its text), not
    as the escaped JSON a transcript stores: a 49 kB file with its newlines and quotes
    escaped is half again as long. Strings are counted as they are, other values as
    compact JSON.
    """
    if isinstance(arguments, Mapping):
        for key, value in arguments.items():
            parts.append(str(key))
            _argument_parts(value, parts)
    elif isinstance(arguments, str):
        parts.append(arguments)
    elif isinstance(arguments, list | tuple) and any(
        isinstance(v, Mapping | str) for v in arguments
    ):
        for value in arguments:
            _argument_parts(value, parts)
    else:
        parts.append(json_text(arguments))


def _content_parts(content: Content, parts: list[str]) -> tuple[int, int]:
    """Append the text parts of ``content``; return (blocks, images)."""
    if isinstance(content, str):
        parts.append(content)
        return 0, 0
    images = 0
    for block in content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ThinkingBlock):
            parts.append(block.thinking)
        elif isinstance(block, ToolCallBlock):
            parts.append(block.name)
            parts.append(block.id)
            _argument_parts(block.arguments, parts)
        elif isinstance(block, ImageBlock):
            images += 1
        elif isinstance(block, ProviderCompactionBlock):
            parts.append(block.text)  # its summary, else its opaque payload's characters
    return len(content), images


def message_parts(message: AgentMessage) -> tuple[list[str], int, int]:
    """The texts a message is billed for, its block count and its image count.

    What each kind carries comes from ``MESSAGE_KINDS``: its labels and lead, its body
    (blocks or plain text), its JSON extras. An unknown role is billed for its
    serialized form.
    """
    kind = message_kind(message)
    if kind is None:
        return [serialize_unknown(message)], 0, 0
    # Branches instead of loops over empty tuples: this runs for every message on a cold turn.
    heads = kind.heads
    parts: list[str] = [getattr(message, name) for name in heads] if heads else []
    body = getattr(message, kind.body)
    if kind.has_blocks:
        blocks, images = _content_parts(body, parts)
    else:
        parts.append(body)
        blocks = images = 0
    if kind.extras:
        for name in kind.extras:
            value = getattr(message, name)
            if value:
                parts.append(json_text(dict(value)))
    if isinstance(message, DigestMessage) and message.facts:
        # The digest's record rides in the framework message's metadata, and some chains
        # print that into the prompt (LlamaIndex's condense prompt does): it is billed.
        parts.append(json_text(message.facts))
    return parts, blocks, images


# A text costs the largest of three estimates:
# - by pieces: a tokenizer first splits text at every change of class (a word, a run of up
#   to three digits, a run of punctuation, a line break, an indent, a space before a number)
#   and no piece costs less than a token. This tracks cl100k_base within a tenth on prose,
#   code, logs, JSON, numbers, tables and bullets; each piece costs a fifth more, what
#   Claude's tokenizer counts over cl100k_base on prose;
# - by character class: lowercase and uppercase letters, digits, punctuation, changes
#   between letters and digits or of case, non-ASCII bytes and four-byte characters (emoji)
#   each cost a share of a token, fitted against cl100k_base. It covers what pieces
#   undercount: one piece that is many tokens (base64, ids, hashes, camelCase) and scripts
#   other than Latin;
# - by characters: FLOOR_CHARS_PER_TOKEN, a backstop under both (cl100k_base reads 4.3-5.8
#   characters a token of English prose, so 3.6 overcounted it by a third or more); the
#   denser CHARS_PER_TOKEN where pieces miss tokens whatever the classes say (a word or two,
#   letters in runs longer than English words), and denser still for accented Latin text.
# Everything is a bytes.translate or a bytes.count, all in C: a class string, and one
# two-letter mask per kind of piece, whose starts are counted as "x" followed by the kind.
def _table(rule: Callable[[int], str]) -> bytes:
    return bytes(ord(rule(i)) for i in range(256))


_CLASSES = _table(
    lambda i: (
        "E"
        if i >= 0xF0
        else "u"
        if i >= 0xE0 or 0x80 <= i < 0xC0
        else "w"
        if i >= 0x80
        else "a"
        if chr(i).islower()
        else "A"
        if chr(i).isupper()
        else "0"
        if chr(i).isdigit()
        else "n"
        if chr(i) in "\r\n"
        else " "
        if chr(i).isspace()
        else "."
    )
)
_WORDS = _table(lambda i: "a" if chr(i).isalpha() else "x")
_NUMBERS = _table(lambda i: "0" if chr(i).isdigit() else "x")
_PUNCTUATION = _table(
    lambda i: "." if i < 0x80 and not chr(i).isalnum() and not chr(i).isspace() else "x"
)
_LINES = _table(lambda i: "n" if chr(i) in "\r\n" else " " if chr(i) in " \t" else "x")
_LOWER, _UPPER, _DIGIT, _PUNCT, _NON_ASCII, _FOUR_BYTE = 0.2, 0.7, 0.58, 0.79, 0.42, 2.4
_SWITCH = 0.80  # a change from letter to digit or digit to letter
_CASE = 0.6  # a change of case inside a word (ids, base64, camelCase) splits it
_TWO_BYTE = 0.14  # more for the lead byte of a two-byte character (Cyrillic, Greek, Arabic)
_PIECES = 1.2  # pieces are a floor on cl100k_base's tokens; Claude's are a fifth more
_PUNCT_TAIL = 0.45  # punctuation after the first of a run ("}));") splits about every third
_ACCENTED_CHARS_PER_TOKEN = 3.0  # Polish: 2.5, German and French: 3.5-4
_ACCENTED = 200  # one accented letter in this many marks a language other than English
_UNBROKEN = 8  # letters are more than 7 bytes in 8: runs longer than English words
_PIECES_MIN_CHARS = 8  # below this, ASCII text is costed by characters alone
_SWITCHES = (b"a0", b"0a", b"A0", b"0A")
_ID_RUN = re.compile(rb"[A-Za-z0-9_+/=-]{16,}")
"""A run long enough to be an id, a hash or base64 rather than a word."""
_ID_CHARS_PER_TOKEN = 1.65  # random ids and base64: cl100k_base splits them every 1.5-2 chars
_LOWER_RUN = re.compile(rb"[a-z]+")
_UPPER_LETTER = re.compile(rb"[A-Z]")
_DIGIT_CHAR = re.compile(rb"[0-9]")


def text_tokens(text: str, chars_per_token: float = FLOOR_CHARS_PER_TOKEN) -> float:
    """Heuristic tokens of ``text``, unrounded.

    At least ``len(text) / chars_per_token``; more for text that splits into many pieces
    (words, numbers, punctuation, lines) or whose characters tokenize densely (ids,
    base64, non-Latin scripts, emoji).

    >>> round(text_tokens("hello world " * 10))
    24
    >>> round(text_tokens("配置加载器" * 20))   # 100 CJK characters
    126
    >>> round(text_tokens(" ".join(["7"] * 50)))   # 99 characters, 99 cl100k tokens
    118
    """
    n = len(text)
    base = n / chars_per_token
    ascii_only = text.isascii()
    if ascii_only and n < _PIECES_MIN_CHARS:  # a word or two: each a token or more
        return max(base, n / CHARS_PER_TOKEN)
    raw = text.encode("ascii") if ascii_only else text.encode("utf-8", "surrogatepass")
    c = raw.translate(_CLASSES)
    count = c.count
    lower, upper, digits, punct = count(b"a"), count(b"A"), count(b"0"), count(b".")
    switches = count(b"aA") + count(b"Aa")
    shape = _LOWER * lower + _UPPER * upper + _DIGIT * digits + _PUNCT * punct + _CASE * switches
    if digits:  # letter/digit alternation (hashes, base64, ids) splits into many tokens
        shape += _SWITCH * sum(map(count, _SWITCHES))
    if not ascii_only:
        two_byte = count(b"w")
        shape += (
            _NON_ASCII * (count(b"u") + two_byte) + _TWO_BYTE * two_byte + _FOUR_BYTE * count(b"E")
        )
        if two_byte * _ACCENTED >= lower + upper:
            # Accented letters: German, French, Polish...: words cl100k_base splits in
            # two or three, which pieces miss; a character rule holds there.
            base = max(base, n / _ACCENTED_CHARS_PER_TOKEN)
    if (len(raw) - lower - upper) * _UNBROKEN < len(raw):
        # Letters in runs longer than a word: one piece, many tokens. The plain character
        # rule holds there.
        base = max(base, n / CHARS_PER_TOKEN)
    best = max(base, shape)
    if (
        (digits or switches)
        and lower + upper
        and (len(raw) - lower - upper - digits) * _UNBROKEN < len(raw)
    ):
        # Text that is mostly one unbroken id, hash or base64 blob: cost its runs as such.
        best = max(best, _dense_runs(raw, n, chars_per_token))
    # Every piece starts at a byte that is not a letter, and each kind of piece has a bound
    # below: when even that bound cannot win, the pieces are not counted at all.
    if _PIECES * (len(raw) - lower - upper + punct + 2 * count(b"n") + 2 * digits) <= best:
        return best
    return max(best, _PIECES * _pieces(raw, c, digits, punct))


def _dense_runs(raw: bytes, n: int, chars_per_token: float) -> float:
    """A floor for text holding ids, hashes or base64: such a run costs a token per 1.65 chars.

    A run counts when it mixes letters with digits, or changes case between short lowercase
    stretches (base64, random ids: under 4.5 letters on average); a camelCase name's words are
    longer, a path changes case rarely, a number has no letters. Characters outside the runs
    cost what the plain floor says.
    """
    dense = 0
    for match in _ID_RUN.finditer(raw):
        run = match.group()
        lowers = _LOWER_RUN.findall(run)
        if not lowers and not _UPPER_LETTER.search(run):
            continue  # a number, or punctuation: no letters
        if _DIGIT_CHAR.search(run) or (
            _UPPER_LETTER.search(run)
            and len(lowers) > 1
            and sum(map(len, lowers)) < 4.5 * len(lowers)
        ):
            dense += len(run)
    return dense / _ID_CHARS_PER_TOKEN + (n - dense) / chars_per_token


def _pieces(raw: bytes, classes: bytes, digits: int, punct: int) -> float:
    """Pieces a tokenizer's pre-split makes of ``raw`` (``classes`` is its class string)."""
    punct_runs = raw.translate(_PUNCTUATION).count(b"x.")
    lines = raw.translate(_LINES)
    pieces = (
        raw.translate(_WORDS).count(b"xa")
        + punct_runs
        + _PUNCT_TAIL * max(0, punct - punct_runs)
        + lines.count(b"xn")
        + lines.count(b"n ")
    )
    if digits:  # digits go in threes; a space before a number is a token of its own
        pieces += (digits + 2 * raw.translate(_NUMBERS).count(b"x0")) / 3 + classes.count(b" 0")
    return pieces


def count_text(text: str, counter: TokenCounter | None = None) -> int:
    """Tokens of a piece of text: ``counter``'s count, or the heuristic's."""
    return counter.count(text) if counter is not None else math.ceil(text_tokens(text))


def estimate_message_tokens(message: AgentMessage, counter: TokenCounter | None = None) -> int:
    """Conservative token cost of one message.

    >>> from window_budget.messages import UserMessage
    >>> estimate_message_tokens(UserMessage("x" * 36))
    14
    """
    parts, blocks, images = message_parts(message)
    if isinstance(counter, str):
        # str has a .count method and would silently count substrings.
        raise TypeError(f"counter {counter!r} is a string; pass resolve_counter({counter!r})")
    if counter is None:
        tokens = math.ceil(sum(map(text_tokens, parts)))
    else:
        tokens = counter.count("\n".join(parts))
    return (
        tokens
        + MESSAGE_FRAMING_TOKENS
        + blocks * BLOCK_FRAMING_TOKENS
        + images * IMAGE_TOKENS
        + _tool_framing(message)
    )


def _tool_framing(message: AgentMessage) -> int:
    """Framing a provider adds around each tool call and each tool result.

    Measured on public pi sessions: a call and its result grow Claude's prompt by about
    six tokens more than their text and block framing.
    """
    if isinstance(message, ToolResultMessage):
        return TOOL_FRAMING_TOKENS
    if isinstance(message, AssistantMessage) and not isinstance(message.content, str):
        return TOOL_FRAMING_TOKENS * sum(isinstance(b, ToolCallBlock) for b in message.content)
    return 0
