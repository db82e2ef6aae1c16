"""``window-budget demo``: a realistic long coding session, and the walk-through it prints.

The transcript is generated deterministically: a user porting a service's config loader,
the agent reading files, editing them, running tests that fail and then pass, a user
constraint or two, and plenty of tool output — well over a 32k window.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import click

from window_budget.budget import estimate_message_tokens, estimate_tokens
from window_budget.cli._output import say
from window_budget.contract import BudgetPolicy, CondenseResult, Model
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    message_text,
)
from window_budget.pipeline import DEFAULT_POLICY, budget_limit, create_condenser

__all__ = ["DEMO_MODEL", "build_demo_transcript", "demo", "run_demo"]

DEMO_MODEL = Model("demo-model", context_window=32_768, max_output_tokens=4096)
"""The window the demo guards: 32k tokens."""

_MODULES = [
    "loader",
    "schema",
    "env",
    "cache",
    "cli",
    "errors",
    "merge",
    "paths",
    "secrets",
    "watch",
    "plugins",
    "render",
]


def _source(module: str, lines: int) -> str:
    body = [
        f'"""{module}: part of the settings service."""',
        "",
        "from __future__ import annotations",
        "",
        "import os",
        "from pathlib import Path",
        "",
    ]
    for i in range(lines):
        body.append(f"def {module}_step_{i}(value: str, *, strict: bool = False) -> str:")
        body.append(f'    """Normalise one {module} value (step {i})."""')
        body.append(f"    if strict and not value:\n        raise ValueError('{module} step {i}')")
        body.append(f"    return value.strip().lower() + '{i}'\n")
    return "\n".join(body)


def build_demo_transcript(turns: int = 40) -> list[AgentMessage]:
    """A coding session of ``turns`` user turns, each with tool calls and their results.

    >>> len(build_demo_transcript(2)) > 8
    True
    """
    msgs: list[AgentMessage] = [
        UserMessage(
            "We're porting the settings service from YAML to TOML. Keep the public API of "
            "settings/loader.py unchanged, never touch the migrations/ folder, and only use the "
            "standard library's tomllib. Start with the loader."
        )
    ]
    for t in range(turns):
        mod = _MODULES[t % len(_MODULES)]
        path = f"settings/{mod}.py"
        call_read, call_edit, call_test = f"call_{t}_read", f"call_{t}_edit", f"call_{t}_test"
        msgs.append(
            AssistantMessage(
                (
                    ThinkingBlock(f"Read {path} first, then port its YAML parsing to tomllib."),
                    TextBlock(f"Let me look at {path} and its tests."),
                    ToolCallBlock(call_read, "read_file", {"path": path}),
                ),
                model=DEMO_MODEL.id,
            )
        )
        msgs.append(ToolResultMessage(call_read, "read_file", _source(mod, 14 + t % 5)))
        msgs.append(
            AssistantMessage(
                (
                    TextBlock(f"Replacing yaml.safe_load with tomllib.loads in {path}."),
                    ToolCallBlock(
                        call_edit,
                        "edit_file",
                        {"path": path, "old": "yaml.safe_load(text)", "new": "tomllib.loads(text)"},
                    ),
                ),
                model=DEMO_MODEL.id,
            )
        )
        msgs.append(ToolResultMessage(call_edit, "edit_file", f"Edited {path}: 1 replacement."))
        failed = t % 4 == 1
        msgs.append(
            AssistantMessage(
                (ToolCallBlock(call_test, "bash", {"command": f"pytest tests/test_{mod}.py -q"}),),
                model=DEMO_MODEL.id,
            )
        )
        if failed:
            out = (
                f"FAILED tests/test_{mod}.py::test_roundtrip - tomllib.TOMLDecodeError: "
                f"Invalid value (at line {3 + t}, column 9)\n"
                + "E   assert ...\n" * 30
                + "1 failed, 11 passed in 0.42s"
            )
        else:
            out = f"tests/test_{mod}.py " + "." * 12 + "\n12 passed in 0.31s"
        msgs.append(ToolResultMessage(call_test, "bash", out, is_error=failed))
        if failed:
            msgs.append(
                AssistantMessage(
                    f"The TOML fixture for {mod} quotes integers; I'll fix the fixture, not the "
                    "parser, since the parser matches the spec.",
                    model=DEMO_MODEL.id,
                )
            )
            msgs.append(
                UserMessage(
                    f"Agreed — fix the fixture for {mod}. Don't change the error messages, other "
                    "services grep for them."
                )
            )
        else:
            msgs.append(
                AssistantMessage(f"{path} is ported and its tests pass.", model=DEMO_MODEL.id)
            )
            msgs.append(UserMessage(f"Good. Next module after {mod}, please."))
    return msgs


def _rule(title: str, width: int) -> str:
    return f"── {title} " + "─" * max(0, width - len(title) - 4)


def _grow(
    msgs: list[AgentMessage],
    run: Callable[..., CondenseResult],
    echo: Callable[[str], None],
    width: int,
) -> None:
    """Replay the session one message at a time, as an agent loop would, and say what ran."""
    history: list[AgentMessage] = []
    passes = masked = digests = 0
    first: CondenseResult | None = None
    for m in msgs:
        result = run([*history, m])
        masked += len(result.masked)
        passes += bool(result.masked)
        digests += result.summary is not None
        if first is None and result.changed:
            first = result
        history = list(result.messages)
    echo(_rule("the session growing one message at a time", width))
    echo(
        f"masking passes  {passes:>6}   {masked} outputs masked   digests written {digests}   "
        f"end {estimate_tokens(history):,} tokens"
    )
    if first is not None and first.masked:
        echo(
            f"first gate      {len(first.masked)} old tool outputs masked, "
            f"{first.tokens_freed:,} tokens freed, no summary call"
        )
        placeholder = first.messages[first.masked[0]]
        for part in textwrap.wrap(
            message_text(placeholder), width=width, initial_indent="e.g. ", subsequent_indent="  "
        ):
            echo(part)


def run_demo(
    echo: Callable[[str], None] = print, *, width: int = 78, policy: BudgetPolicy = DEFAULT_POLICY
) -> None:
    """Print the gate, masking, the cut, the token counts and the digest on the demo transcript.

    Under the default policy masking is enough for the demo session (no digest needed); the
    walk-through then shows what a manual compaction of the masked session folds.
    """
    msgs = build_demo_transcript()
    model = DEMO_MODEL
    total = estimate_tokens(msgs)
    limit = budget_limit(model, policy)
    echo(_rule("window-budget demo", width))
    echo(f"transcript      {len(msgs):>6} messages   {total:>7,} tokens (heuristic)")
    echo(
        f"window          {model.context_window:>7,} tokens   reserve {policy.reserve_tokens:,}"
        f"   trigger {policy.trigger_ratio:.0%}"
    )
    echo(f"limit           {limit:>7,.0f} tokens   over budget: {'yes' if total > limit else 'no'}")

    # Where the gate fires while the session grows.
    running = 0
    for i, m in enumerate(msgs):
        running += estimate_message_tokens(m)
        if running > limit:
            echo(f"gate fires at   message {i} of {len(msgs)} ({running:,} tokens)")
            break

    condenser = create_condenser(model=model, policy=policy)
    _grow(msgs, condenser.run_sync, echo, width)

    result = condenser.run_sync(msgs)  # all at once, masking is not enough: a digest
    plan = result.plan
    echo(_rule("the whole session at once: the cut", width))
    echo(
        f"dropped         {len(plan.dropped):>6} messages   "
        f"{estimate_tokens(plan.dropped):>7,} tokens → folded into one digest"
    )
    echo(
        f"kept verbatim   {len(plan.kept):>6} messages   {estimate_tokens(plan.kept):>7,} tokens"
        f" (first kept: {plan.kept[0].role})"
        if plan.kept
        else "kept verbatim   none"
    )
    echo(
        f"after           {len(result.messages):>6} messages   {result.tokens_after:>7,} tokens"
        f"   ({result.tokens_after / result.tokens_before:.0%} of before)"
    )
    assert result.summary is not None
    why = result.summary.fallback_reason or "model"
    echo(_rule(f"the digest ({'network-free: ' + why if result.summary.fallback else why})", width))
    for line in result.summary.text.splitlines():
        for part in textwrap.wrap(line, width=width, subsequent_indent="  ") or [""]:
            echo(part)
    echo(_rule("done", width))


@click.command()
@click.option("--width", default=78, show_default=True, help="Output width in columns.")
def demo(width: int) -> None:
    """Condense a long bundled coding session offline and show each step."""
    run_demo(say, width=width)
