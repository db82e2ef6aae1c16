"""Provider shapes inside framework messages, read once for the adapters and the readers.

A LangChain message's content is a string or a list of parts, and the parts are the
providers' own blocks passed through: Anthropic's ``text``, ``thinking``,
``redacted_thinking``, ``image`` and ``tool_use``; OpenAI's ``image_url`` and Responses
``reasoning`` items; LangChain's standard ``image``, ``reasoning`` and ``tool_call`` blocks;
a provider's ``compaction`` block (:func:`content_blocks`; anything else is kept as its JSON
text). Tool calls come as JSON text a model wrote (:func:`tool_arguments`) and, in
LlamaIndex, often twice: as a call block and as the provider's raw entry
(:func:`merged_tool_calls`). The LangChain and LlamaIndex adapters read live messages with
these, and the readers read the same messages dumped to files, so both see one message.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Iterable, Mapping
from typing import Any, Final

from window_budget.messages._blocks import (
    Block,
    ImageBlock,
    ProviderCompactionBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from window_budget.messages._json import loads

__all__ = [
    "REDACTED_THINKING",
    "TOOL_CALL_PARTS",
    "content_blocks",
    "guess_image_type",
    "image_from_url",
    "json_text",
    "merged_tool_calls",
    "tool_arguments",
]

REDACTED_THINKING: Final = "[redacted thinking]"
"""Stand-in text of a ``redacted_thinking`` block; its encrypted data rides in ``signature``,
so the core never cuts it (a provider takes it back only byte for byte)."""

TOOL_CALL_PARTS: Final = ("tool_use", "tool_call", "server_tool_call")
"""Part types that repeat a call the message also lists in ``tool_calls`` (a tuple: a
part's ``type`` may be anything, a list included, and a set would refuse to look it up)."""


def json_text(value: object) -> str:
    """``value`` as compact JSON text (anything JSON cannot hold as its ``repr``)."""
    return json.dumps(value, ensure_ascii=False, default=repr, separators=(",", ":"))


def tool_arguments(raw: object) -> dict[str, Any]:
    """A tool call's arguments as a dict: a mapping as it is, a JSON object's text decoded.

    Anything else (text that is not a JSON object, nested past the recursion limit or
    holding an integer too long to convert, or another value) is kept whole under
    ``"_raw"``, never an error: the arguments are whatever a model wrote.
    """
    if isinstance(raw, Mapping):
        return {str(k): v for k, v in raw.items()}
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    try:
        value = loads(raw) if isinstance(raw, str) else None
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"_raw": raw}


def _entry_call(entry: object, index: int) -> ToolCallBlock:
    """One raw tool-call entry as a call.

    An OpenAI ``{"id", "function": {...}}`` dict, a LlamaIndex ``ToolSelection`` dump
    (``tool_id``, ``tool_name``, ``tool_kwargs``) or alike.
    """
    if not isinstance(entry, Mapping):
        return ToolCallBlock(f"kw-{index}", "tool", {"_raw": entry})
    fn = entry.get("function")
    if isinstance(fn, Mapping):
        name, args = fn.get("name"), tool_arguments(fn.get("arguments"))
    else:
        name = entry.get("tool_name") or entry.get("name")
        args = tool_arguments(entry.get("tool_kwargs", entry.get("arguments", entry.get("input"))))
    call_id = entry.get("id") or entry.get("tool_id") or entry.get("tool_call_id") or f"kw-{index}"
    return ToolCallBlock(_text(call_id), _text(name) or "tool", args)


def merged_tool_calls(
    blocks: Iterable[tuple[int, object, object, object]], entries: object
) -> list[ToolCallBlock]:
    """Every tool call a message makes, each once: its call blocks, then the raw entries.

    Function-calling integrations (LlamaIndex's among them) often keep one call twice: as a
    tool-call block and as the provider's raw entry in ``additional_kwargs["tool_calls"]``.
    An entry repeats a block when their ids match, or when one of them has no id and the
    block names the same tool.

    Args:
        blocks: ``(index, id, name, arguments)`` of each call block, ``index`` its place
            among the message's blocks (a call without an id is named ``block-{index}``).
        entries: the raw entries as plain data (see :func:`_entry_call`); anything but a
            list or tuple holds none.

    """
    calls: list[ToolCallBlock] = []
    seen: set[str] = set()
    names: list[str] = []  # block names a raw entry may still repeat
    idless: list[str] = []  # names of blocks without an id
    for index, raw_id, raw_name, arguments in blocks:
        call_id, name = _text(raw_id) if raw_id else f"block-{index}", _text(raw_name)
        calls.append(ToolCallBlock(call_id, name, tool_arguments(arguments)))
        seen.add(call_id)
        names.append(name)
        if not raw_id:
            idless.append(name)
    for i, entry in enumerate(entries if isinstance(entries, list | tuple) else ()):
        call = _entry_call(entry, i)
        if call.id in seen:
            if call.name in names:
                names.remove(call.name)
            continue
        # An entry without an id, or a block without one, repeats the same tool.
        if (call.id.startswith("kw-") and call.name in names) or call.name in idless:
            for pool in (names, idless):
                if call.name in pool:
                    pool.remove(call.name)
            continue
        calls.append(call)
        seen.add(call.id)
    return calls


def guess_image_type(url: str, default: str = "image/png") -> str:
    """The MIME type a URL's file name suggests (``.jpg`` -> ``image/jpeg``), else ``default``."""
    path = url.split("?", 1)[0].split("#", 1)[0]
    guess, _ = mimetypes.guess_type(path)
    return guess if guess and guess.startswith("image/") else default


def image_from_url(url: str, mime_type: str | None = None) -> ImageBlock:
    """An image block from a URL or a ``data:`` URI (the MIME type is taken from the URI)."""
    if url.startswith("data:") and ";base64," in url:
        head, _, data = url.partition(";base64,")
        return ImageBlock(data, head[5:] or mime_type or "image/png")
    return ImageBlock(url, mime_type or guess_image_type(url))


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else json_text(value)


def _image(part: Mapping[str, Any]) -> ImageBlock:
    mime = part.get("mime_type") or part.get("media_type")
    mime = mime if isinstance(mime, str) and mime else None
    url = part.get("image_url")  # OpenAI: {"url": ...} or the URL itself
    if isinstance(url, Mapping):
        url = url.get("url")
    source = part.get("source")  # Anthropic: {"type": "base64" | "url", ...}
    if isinstance(source, Mapping):
        media = source.get("media_type")
        mime = mime or (media if isinstance(media, str) and media else None)
        url = url or source.get("url")
        data = source.get("data")
    else:
        data = None
    data = data or part.get("base64") or part.get("data")
    if data:
        return ImageBlock(_text(data), mime or "image/png")
    return image_from_url(_text(url or part.get("url")), mime)


def _reasoning(part: Mapping[str, Any]) -> str:
    text = part.get("reasoning") or part.get("thinking") or part.get("text")
    if isinstance(text, str):
        return text
    summary = part.get("summary")  # OpenAI Responses: a list of summary parts
    if isinstance(summary, list):
        return "\n".join(_text(p.get("text")) for p in summary if isinstance(p, Mapping))
    return json_text(dict(part))


def _block(part: Mapping[str, Any]) -> Block:
    kind = part.get("type")
    if kind == "text":
        return TextBlock(_text(part.get("text")))
    if kind == "thinking":
        signature = part.get("signature")
        return ThinkingBlock(
            _text(part.get("thinking")), signature if isinstance(signature, str) else None
        )
    if kind == "reasoning":
        return ThinkingBlock(_reasoning(part))
    if kind == "redacted_thinking":
        return ThinkingBlock(REDACTED_THINKING, _text(part.get("data")))
    if kind in ("image", "image_url"):
        return _image(part)
    compaction = ProviderCompactionBlock.from_provider(part)
    return compaction if compaction is not None else TextBlock(json_text(dict(part)))


def content_blocks(
    content: str | list[Any], *, skip_tool_calls: bool, image_limit: int | None = None
) -> list[tuple[int, Block]]:
    """The core blocks of a content string or part list, each with its part's index.

    Args:
        content: a message's content: a string, or a list of strings and part dicts.
        skip_tool_calls: leave out :data:`TOOL_CALL_PARTS` (an assistant message lists the
            same calls in ``tool_calls``, where they are read once); otherwise they are
            kept as their JSON text, as any other part.
        image_limit: cut inline image data to this many characters (an image is counted at
            a flat rate, so the data is not needed to count it); a URL is kept up to 2,048
            characters, so a summary can still name it. None keeps the data whole.

    """
    if isinstance(content, str):
        return [(0, TextBlock(content))] if content else []
    out: list[tuple[int, Block]] = []
    for i, part in enumerate(content):
        if isinstance(part, str):
            out.append((i, TextBlock(part)))
        elif not isinstance(part, Mapping):
            out.append((i, TextBlock(json_text(part))))
        elif not (skip_tool_calls and part.get("type") in TOOL_CALL_PARTS):
            block = _block(part)
            if image_limit is not None and isinstance(block, ImageBlock):
                url = block.data.startswith(("https://", "http://"))
                block = ImageBlock(block.data[: 2048 if url else image_limit], block.mime_type)
            out.append((i, block))
    return out
