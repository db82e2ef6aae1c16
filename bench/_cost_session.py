"""The scripted session of ``bench_session_cost.py``: the script, the recording models, the tools.

One coding-agent session per seed: twelve planted facts in the first two turns (the objective,
three constraints, two files, two commands, two errors, two decisions), then turns porting one
service each, with competing constraints, files, failing tests and decisions; tool outputs of
varied sizes. The agent model follows the script whatever it is sent; every request it and the
summary model receive is recorded as the provider would see it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

SYSTEM_PROMPT = (
    "You are a careful coding agent working in a Python monorepo. Use the tools to read, "
    "search, run and edit; keep changes small; explain each decision in one line. "
) * 6
DIGEST_REPLY = "\n".join(
    [
        "# Objective",
        "Carry on with the work the user asked for in this session.",
        "# Guardrails",
        "Follow the user's rules as stated earlier.",
        "# Status",
        "## Shipped",
        *[f"- step {i}: a module was read, edited and its tests were run" for i in range(12)],
        "## Active",
        "- the current change set is being tested",
        "## Stuck",
        "- some tests still fail; see the latest output",
        "# Rationale",
        *[f"- choice {i}: the simplest change that keeps the tests green" for i in range(8)],
        "# Plan",
        "- continue with the next file, then run the whole suite",
        "# Carryover",
        "- nothing else",
    ]
)

# ---------------------------------------------------------------- the session script

PLANTED = {
    "objective": "invoice rendering",
    "no-migration": "0042_ledger",
    "byte-identical": "byte-identical",
    "zoneinfo": "zoneinfo",
    "file-bridge": "pdf_bridge.py",
    "file-template": "invoice_v3.html",
    "cmd-shard": "test-render",
    "cmd-golden": "golden-invoices",
    "err-timeout": "pdfw-3",
    "err-key": "tax_region_code",
    "decision-weasy": "WeasyPrint",
    "decision-approve": "--approve",
}
"""Fact → the string that must appear in the final request for the fact to count as kept."""

_VOCABULARY = (
    "def class return self value result config request response handler client session token "
    "cache index record parse render format invoice ledger tax region amount total currency "
    "line item customer account worker queue retry timeout error status payload schema field "
    "import from async await yield None True False raise except try with for in if else elif "
    "assert test fixture mock patch json dict list str int float bytes"
)
_WORDS = _VOCABULARY.split()


@dataclass(slots=True)
class Call:
    name: str
    args: dict[str, str]
    output: str
    error: bool = False


@dataclass(slots=True)
class Turn:
    ask: str
    steps: list[list[Call]] = field(default_factory=list)
    answer: str = ""


def _code(rng: random.Random, tokens: int) -> str:
    """About ``tokens`` cl100k tokens of code-like text (about 4 characters a token)."""
    lines, size = [], 0
    while size < tokens * 4:
        indent = "    " * rng.randrange(3)
        line = indent + " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(3, 11)))
        lines.append(f"{len(lines) + 1:>4}  {line}")
        size += len(lines[-1]) + 1
    return "\n".join(lines)


def _size(rng: random.Random) -> int:
    """A tool output's size in tokens: many small, some medium, a few large."""
    r = rng.random()
    if r < 0.45:
        return rng.randrange(40, 400)
    if r < 0.85:
        return rng.randrange(600, 2600)
    return rng.randrange(3000, 9000)


def build_session(seed: int, calls: int) -> list[Turn]:
    """The script: twelve planted facts in the first two turns, competing ones after."""
    rng = random.Random(seed)
    per_turn = 34
    turns = [
        Turn(
            "Objective: move invoice rendering off the legacy PDF worker into the API process. "
            "Constraints: never modify db/migrations/0042_ledger.py; keep the public "
            "/v1/invoices response byte-identical; only use the stdlib zoneinfo, not pytz."
        ),
        Turn("Now make the golden invoices pass again and tell me what you decided."),
    ]
    first = turns[0]
    first.steps += [
        [Call("read_file", {"path": "billing/render/pdf_bridge.py"}, _code(rng, 1800))],
        [Call("read_file", {"path": "billing/render/templates/invoice_v3.html"}, _code(rng, 900))],
        [
            Call(
                "bash",
                {"command": "make test-render SHARD=7"},
                _code(rng, 1200)
                + "\nRenderTimeout: worker pdfw-3 exceeded 30s rendering invoice 88121"
                + "\n1 failed, 212 passed in 41.2s",
                error=True,
            )
        ],
    ]
    first.answer = (
        "Decision: render through WeasyPrint in-process; the legacy worker stays as fallback."
    )
    turns[1].steps += [
        [
            Call(
                "bash",
                {"command": "tox -e golden-invoices"},
                _code(rng, 1500) + "\nE   KeyError: 'tax_region_code'\n3 failed, 58 passed",
                error=True,
            )
        ],
        [
            Call(
                "edit_file",
                {"path": "billing/render/tax.py", "old": "region", "new": "tax_region"},
                "edited billing/render/tax.py: 4 lines changed",
            )
        ],
    ]
    turns[1].answer = "Decision: golden files are regenerated only with --approve, never by CI."
    n = sum(len(t.steps) for t in turns)
    k = 2
    while n < calls - len(turns):
        mod = f"svc_{k}"
        turn = Turn(
            f"Next: port {mod} to the new renderer. Constraint: never edit {mod}/legacy_{k}.py; "
            f"keep {mod}'s CLI flags as they are."
        )
        for j in range(min(per_turn, calls - len(turns) - n - 1)):
            kind = rng.random()
            if kind < 0.4:
                path = f"{mod}/module_{j}.py"
                call = Call("read_file", {"path": path}, _code(rng, _size(rng)))
            elif kind < 0.6:
                pattern = rng.choice(_WORDS) + f"_{j}"
                call = Call("grep", {"pattern": pattern, "path": mod}, _code(rng, _size(rng) // 2))
            elif kind < 0.85:
                command = f"pytest tests/{mod}/test_{j}.py -q"
                failed = rng.random() < 0.3
                tail = (
                    f"\nE   AssertionError: {mod} field_{j} != expected\n1 failed, 9 passed"
                    if failed
                    else "\n10 passed in 1.2s"
                )
                call = Call("bash", {"command": command}, _code(rng, _size(rng)) + tail, failed)
            else:
                path = f"{mod}/module_{j}.py"
                call = Call(
                    "edit_file",
                    {"path": path, "old": f"old_{j}", "new": f"new_{j}"},
                    f"edited {path}: {rng.randrange(1, 30)} lines changed",
                )
            turn.steps.append([call])
        turn.answer = (
            f"Decision: {mod} keeps its own formatter for now; ported {len(turn.steps)} steps."
        )
        turns.append(turn)
        n += len(turn.steps)
        k += 1
    return turns


# ---------------------------------------------------------------- recording models


@dataclass(slots=True)
class Request:
    kind: str  # "agent" or "summary"
    blocks: list[str]  # serialized blocks: tools+system first for agent requests
    output: str


class Counter:
    """cl100k per block, memoised by text (a session repeats most blocks on every request)."""

    def __init__(self) -> None:
        from window_budget.budget import load_encoding

        self._enc = load_encoding()
        self._memo: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        n = self._memo.get(text)
        if n is None:
            n = len(self._enc.encode_ordinary(text)) + 4
            self._memo[text] = n
        return n


def serialize(message: Any) -> str:
    """A message as the provider sees it: role, text, tool calls, the call it answers."""
    content = message.content
    text = content if isinstance(content, str) else json.dumps(content, sort_keys=True)
    parts = [message.type, text]
    for call in getattr(message, "tool_calls", None) or []:
        parts.append(f"call {call['id']} {call['name']} {json.dumps(call['args'], sort_keys=True)}")
    if getattr(message, "tool_call_id", None):
        parts.append(f"answers {message.tool_call_id}")
    return "\n".join(parts)


def make_models(
    turns: list[Turn], tools_text: str, log: list[Request], count: Counter
) -> tuple[Any, Any]:
    """The agent model (follows the script) and the summary model, both recording."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    def script() -> Iterator[AIMessage]:
        for t, turn in enumerate(turns):
            for s, step in enumerate(turn.steps):
                calls = [
                    {"name": c.name, "args": c.args, "id": f"t{t}s{s}c{i}", "type": "tool_call"}
                    for i, c in enumerate(step)
                ]
                yield AIMessage("", tool_calls=calls)
            yield AIMessage(turn.answer)

    replies = script()

    class Agent(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "bench-scripted-agent"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> ChatResult:
            reply = next(replies)
            blocks = [tools_text + "\n" + serialize(messages[0]), *map(serialize, messages[1:])]
            out = serialize(reply)
            log.append(Request("agent", blocks, out))
            tokens = sum(map(count, blocks))
            reply.usage_metadata = {
                "input_tokens": tokens,
                "output_tokens": count(out),
                "total_tokens": tokens + count(out),
            }
            return ChatResult(generations=[ChatGeneration(message=reply)])

    class Summarizer(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "bench-summarizer"

        def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> ChatResult:
            log.append(Request("summary", [serialize(m) for m in messages], DIGEST_REPLY))
            return ChatResult(generations=[ChatGeneration(message=AIMessage(DIGEST_REPLY))])

    return Agent(), Summarizer()


def make_tools(turns: list[Turn]) -> list[Any]:
    from langchain_core.tools import StructuredTool, ToolException

    outputs = {
        (c.name, json.dumps(c.args, sort_keys=True)): c
        for turn in turns
        for step in turn.steps
        for c in step
    }

    def run(name: str, args: dict[str, str]) -> str:
        call = outputs[(name, json.dumps(args, sort_keys=True))]
        if call.error:
            raise ToolException(call.output)
        return call.output

    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return run("read_file", {"path": path})

    def grep(pattern: str, path: str) -> str:
        """Search files under a path for a pattern."""
        return run("grep", {"pattern": pattern, "path": path})

    def bash(command: str) -> str:
        """Run a shell command in the repository."""
        return run("bash", {"command": command})

    def edit_file(path: str, old: str, new: str) -> str:
        """Replace text in a file."""
        return run("edit_file", {"path": path, "old": old, "new": new})

    return [
        StructuredTool.from_function(f, handle_tool_error=True)
        for f in (read_file, grep, bash, edit_file)
    ]
