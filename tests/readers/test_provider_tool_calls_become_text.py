"""Tool calls a provider ran itself, and LangChain's invalid tool calls, are read as text:
written back as tool calls they would have no result and be rejected."""

from __future__ import annotations

import io
import json

from window_budget import (
    AssistantMessage,
    ToolCallBlock,
)
from window_budget.readers import read_transcript, write_transcript


def _server_tool_reply() -> dict[str, object]:
    return {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "let me look"},
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {"query": "tomllib"},
            },
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": [
                    {
                        "type": "web_search_result",
                        "url": "https://docs.python.org",
                        "title": "tomllib",
                    }
                ],
            },
            {"type": "text", "text": "found it"},
        ],
    }


def test_server_tool_use_is_text_not_a_tool_call() -> None:
    doc = {"messages": [{"role": "user", "content": "search"}, _server_tool_reply()]}
    back = read_transcript(io.StringIO(json.dumps(doc)), format="anthropic")
    reply = back.messages[-1]
    assert isinstance(reply, AssistantMessage)
    assert reply.tool_calls == ()
    text = json.dumps([b.text for b in reply.content if hasattr(b, "text")])  # type: ignore[union-attr]
    assert "web_search" in text
    assert "tomllib" in text
    assert "docs.python.org" in text

    out = io.StringIO()
    write_transcript(back.messages, out, format="anthropic")
    written = json.loads(out.getvalue())
    kinds = {
        b["type"]
        for m in written["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
    }
    assert "tool_use" not in kinds


def test_claude_code_server_tool_use_is_text() -> None:
    line = {
        "type": "assistant",
        "sessionId": "s",
        "uuid": "u1",
        "message": {"id": "msg_1", "model": "claude-x", **_server_tool_reply()},
    }
    back = read_transcript(io.StringIO(json.dumps(line) + "\n"), format="claude-code")
    reply = back.messages[0]
    assert isinstance(reply, AssistantMessage)
    assert reply.tool_calls == ()


def test_langchain_invalid_tool_calls_become_text() -> None:
    dump = [
        {"type": "human", "data": {"content": "go"}},
        {
            "type": "ai",
            "data": {
                "content": "",
                "tool_calls": [],
                "invalid_tool_calls": [
                    {
                        "name": "bash",
                        "args": "{not json",
                        "id": "call_1",
                        "error": "bad JSON",
                        "type": "invalid_tool_call",
                    }
                ],
            },
        },
    ]
    back = read_transcript(io.StringIO(json.dumps(dump)), format="langchain")
    reply = back.messages[-1]
    assert isinstance(reply, AssistantMessage)
    assert not any(isinstance(b, ToolCallBlock) for b in reply.content)
    text = (
        reply.content
        if isinstance(reply.content, str)
        else " ".join(getattr(b, "text", "") for b in reply.content)
    )
    assert "bash" in text
    assert "{not json" in text
    assert "bad JSON" in text
