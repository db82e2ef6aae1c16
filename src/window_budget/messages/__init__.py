"""The message kinds the core reads and writes.

These types are pure values: frozen dataclasses with a ``role`` discriminator.
Content is either a ``str`` or a tuple of blocks (any sequence given to a
constructor is stored as a tuple). Every field is type-checked at construction: a
wrong type raises :class:`~window_budget.errors.MessageError` naming the class and the
field, so junk (``TextBlock(None)``) is refused where it is made instead of crashing
the estimator later. Consumers dispatch on ``role`` and keep a
generic fallback for objects they do not know, so an unknown message is
estimated from its serialized form and flattened, never dropped or crashed on.

>>> msg = UserMessage("fix the failing test in tests/test_io.py")
>>> msg.role
'user'
>>> call = ToolCallBlock("c1", "bash", {"cmd": "pytest"})
>>> message_text(AssistantMessage([TextBlock("on it"), call]))
'on it'
"""

from __future__ import annotations

from window_budget.messages._blocks import (
    Block,
    Content,
    ImageBlock,
    ProviderCompactionBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from window_budget.messages._dicts import message_from_dict, message_to_dict
from window_budget.messages._dicts import parse_timestamp as parse_timestamp
from window_budget.messages._json import JSONProblem as JSONProblem
from window_budget.messages._json import loads as loads
from window_budget.messages._kinds import KNOWN_MESSAGE_TYPES as KNOWN_MESSAGE_TYPES
from window_budget.messages._kinds import MESSAGE_KINDS as MESSAGE_KINDS
from window_budget.messages._kinds import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    DigestMessage,
    RoleMessage,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from window_budget.messages._kinds import MessageKind as MessageKind
from window_budget.messages._kinds import message_kind as message_kind
from window_budget.messages._parts import REDACTED_THINKING as REDACTED_THINKING
from window_budget.messages._parts import TOOL_CALL_PARTS as TOOL_CALL_PARTS
from window_budget.messages._parts import content_blocks as content_blocks
from window_budget.messages._parts import guess_image_type as guess_image_type
from window_budget.messages._parts import image_from_url as image_from_url
from window_budget.messages._parts import json_text as json_text
from window_budget.messages._parts import merged_tool_calls as merged_tool_calls
from window_budget.messages._parts import tool_arguments as tool_arguments
from window_budget.messages._text import content_text as content_text
from window_budget.messages._text import message_blocks as message_blocks
from window_budget.messages._text import message_text, tool_call_ids
from window_budget.messages._text import serialize_unknown as serialize_unknown
from window_budget.messages._text import tool_calls as tool_calls

__all__ = [
    "AgentMessage",
    "AssistantMessage",
    "BashExecutionMessage",
    "Block",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "Content",
    "CustomMessage",
    "DigestMessage",
    "ImageBlock",
    "ProviderCompactionBlock",
    "RoleMessage",
    "TextBlock",
    "ThinkingBlock",
    "ToolCallBlock",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "message_from_dict",
    "message_text",
    "message_to_dict",
    "tool_call_ids",
]
