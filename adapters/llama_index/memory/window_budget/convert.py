"""Conversion between LlamaIndex ``ChatMessage`` objects and the core's message kinds.

Only the direction LlamaIndex → core is lossy by design: the core message exists to be
counted and flattened for the summarizer, while the caller always gets its own
``ChatMessage`` objects back (as copies) for the part of the history that is kept.
Everything a provider would be billed for is counted: text, thinking, tool-call names,
ids and arguments, citations, images and any content block this module does not know,
which is estimated from its serialized form.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    MessageRole,
)
from llama_index.core.base.llms.types import (
    ImageBlock as LIImageBlock,
)
from llama_index.core.base.llms.types import (
    TextBlock as LITextBlock,
)
from llama_index.core.base.llms.types import (
    ThinkingBlock as LIThinkingBlock,
)
from llama_index.core.base.llms.types import (
    ToolCallBlock as LIToolCallBlock,
)

from window_budget.digest import SESSION_HEADER
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    Block,
    CustomMessage,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    content_text,
)

__all__ = [
    "DIGEST_COVERED_KEY",
    "DIGEST_KEY",
    "SYSTEM_ROLES",
    "from_core_shortened",
    "is_digest_message",
    "make_digest_chat_message",
    "split_pinned",
    "to_core",
    "tool_calls_of",
]

DIGEST_KEY = "window_budget_digest"
"""``additional_kwargs`` flag set on the digest message this memory writes."""
DIGEST_COVERED_KEY = "window_budget_covered"
"""``additional_kwargs`` entry: how many original messages the digest stands for."""

SYSTEM_ROLES = frozenset({MessageRole.SYSTEM, MessageRole.DEVELOPER})
"""Roles that carry instructions; a leading run of them is pinned."""
_ASSISTANT_ROLES = frozenset({MessageRole.ASSISTANT, MessageRole.CHATBOT, MessageRole.MODEL})
_TOOL_ROLES = frozenset({MessageRole.TOOL, MessageRole.FUNCTION})
# Keys whose content is converted explicitly; anything else in additional_kwargs is
# provider metadata that still travels with the message and is counted as such.
_HANDLED_KWARGS = frozenset({"tool_calls", "tool_call_id", "name", "tool_name",
                             DIGEST_KEY, DIGEST_COVERED_KEY})


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=repr, separators=(",", ":"))


def _plain(value: Any) -> Any:
    """A JSON-friendly form of a pydantic model, dataclass-ish object or mapping."""
    if hasattr(value, "model_dump"):
        try:
            return value.model_dump(mode="json")
        except Exception:
            return repr(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "__dict__"):
        return {k: _plain(v) for k, v in vars(value).items() if not k.startswith("_")}
    return value


def _arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict; a JSON string is parsed, anything else wrapped."""
    if isinstance(raw, Mapping):
        return {str(k): v for k, v in raw.items()}
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return {"_raw": raw}
        return parsed if isinstance(parsed, dict) else {"_raw": raw}
    if raw is None:
        return {}
    return {"_raw": _plain(raw)}


def _kwargs_tool_call(raw: Any, index: int) -> ToolCallBlock:
    """One entry of ``additional_kwargs["tool_calls"]`` (OpenAI dict or object, ToolSelection)."""
    data = _plain(raw)
    if not isinstance(data, Mapping):
        return ToolCallBlock(f"kw-{index}", "tool", {"_raw": data})
    fn = data.get("function")
    if isinstance(fn, Mapping):
        name = fn.get("name") or "tool"
        args = _arguments(fn.get("arguments"))
    else:
        name = data.get("tool_name") or data.get("name") or "tool"
        args = _arguments(data.get("tool_kwargs", data.get("arguments", data.get("input"))))
    call_id = data.get("id") or data.get("tool_id") or data.get("tool_call_id") or f"kw-{index}"
    return ToolCallBlock(str(call_id), str(name), args)


def tool_calls_of(message: ChatMessage) -> list[ToolCallBlock]:
    """Every tool call ``message`` makes, each once: blocks first, then ``additional_kwargs``.

    Function-calling LLMs often store the same call twice (a ``ToolCallBlock`` and the
    provider's raw entry in ``additional_kwargs["tool_calls"]``); matching ids count once.
    """
    calls: list[ToolCallBlock] = []
    seen: set[str] = set()
    for i, block in enumerate(message.blocks):
        if isinstance(block, LIToolCallBlock):
            call_id = block.tool_call_id or f"block-{i}"
            calls.append(ToolCallBlock(call_id, block.tool_name, _arguments(block.tool_kwargs)))
            seen.add(call_id)
    raw_calls = message.additional_kwargs.get("tool_calls")
    if isinstance(raw_calls, list | tuple):
        block_names = [c.name for c in calls]
        for i, raw in enumerate(raw_calls):
            call = _kwargs_tool_call(raw, i)
            if call.id in seen:
                continue
            # A block without an id duplicates the raw entry of the same tool.
            if call.id.startswith("kw-") and call.name in block_names:
                block_names.remove(call.name)
                continue
            calls.append(call)
            seen.add(call.id)
    return calls


def _block(block: Any) -> list[Block]:
    """Core blocks for one LlamaIndex content block (tool calls are handled separately)."""
    if isinstance(block, LITextBlock):
        return [TextBlock(block.text)]
    if isinstance(block, LIThinkingBlock):
        return [ThinkingBlock(block.content or "")]
    if isinstance(block, LIToolCallBlock):
        return []
    if isinstance(block, LIImageBlock):
        ref = str(block.url or block.path or "inline")
        return [ImageBlock(ref, block.image_mimetype or "image/png")]
    kind = getattr(block, "block_type", type(block).__name__)
    if kind == "citation":
        cited = block.cited_content
        inner = _block(cited)
        return [TextBlock(f"[cited {block.title} — {block.source}]"), *inner]
    if kind == "citable":
        out: list[Block] = [TextBlock(f"[source {block.title} — {block.source}]")]
        for part in block.content:
            out.extend(_block(part))
        return out
    # Audio, video, documents, cache points and anything newer: keep a text stand-in
    # sized from the serialized block (binary payloads counted as a flat media cost).
    try:
        data = block.model_dump(mode="json", exclude={"audio", "video", "data", "image"})
    except Exception:
        data = repr(block)
    parts: list[Block] = [TextBlock(f"[{kind}] {_dump(data)}")]
    if any(getattr(block, f, None) for f in ("audio", "video", "data")):
        parts.append(ImageBlock(f"{kind}-payload", "application/octet-stream"))
    return parts


def _content(message: ChatMessage) -> list[Block]:
    blocks: list[Block] = []
    for b in message.blocks:
        blocks.extend(_block(b))
    extra = {k: v for k, v in message.additional_kwargs.items() if k not in _HANDLED_KWARGS}
    if extra:
        blocks.append(TextBlock(f"[metadata] {_dump(_plain(extra))}"))
    return blocks


def is_digest_message(message: ChatMessage) -> bool:
    """True for a digest message this memory wrote."""
    return bool(message.additional_kwargs.get(DIGEST_KEY))


def to_core(message: ChatMessage) -> AgentMessage:
    """The core message ``message`` is counted and summarized as.

    System and developer messages that are not pinned become a ``custom`` message (they
    are counted and kept in order); every other role maps onto user, assistant or tool
    result. Tool results carry ``additional_kwargs["tool_call_id"]``.
    """
    role = message.role
    blocks = _content(message)
    if role == MessageRole.USER:
        if is_digest_message(message):
            return UserMessage(message.content or SESSION_HEADER)
        return UserMessage(tuple(blocks))
    if role in _ASSISTANT_ROLES:
        return AssistantMessage((*blocks, *tool_calls_of(message)))
    if role in _TOOL_ROLES:
        kw = message.additional_kwargs
        call_id = kw.get("tool_call_id") or kw.get("tool_id") or ""
        name = kw.get("name") or kw.get("tool_name") or role.value
        return ToolResultMessage(str(call_id), str(name), tuple(blocks))
    return CustomMessage(str(getattr(role, "value", role)), tuple(blocks))


def split_pinned(messages: Sequence[ChatMessage]) -> int:
    """How many leading messages are system/developer instructions (pinned, never evicted)."""
    n = 0
    for m in messages:
        if m.role not in SYSTEM_ROLES:
            break
        n += 1
    return n


def make_digest_chat_message(text: str, covered: int) -> ChatMessage:
    """The digest as LlamaIndex stores it: one user message, marked in ``additional_kwargs``."""
    return ChatMessage(role=MessageRole.USER, content=text,
                       additional_kwargs={DIGEST_KEY: True, DIGEST_COVERED_KEY: covered})


def from_core_shortened(original: ChatMessage, shortened: AgentMessage) -> ChatMessage:
    """A copy of ``original`` whose text is the core's shortened text (marker included).

    Tool calls and the message's metadata are kept; other content blocks are replaced by
    the shortened text, which already names what was removed.
    """
    text = ""
    if isinstance(shortened, UserMessage | AssistantMessage | ToolResultMessage | CustomMessage):
        text = content_text(shortened.content)
    calls = [b for b in original.blocks if isinstance(b, LIToolCallBlock)]
    copy = original.model_copy(deep=True)
    copy.blocks = [LITextBlock(text=text), *[c.model_copy() for c in calls]]
    return copy
