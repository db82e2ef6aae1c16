"""Replies of small real models: echoes, copies, wrappers and invented paths.

Each shape was measured with Qwen2.5-Coder 0.5B / 1.5B instruct as the summarizer over real
sessions; each test scripts a reply of that shape. A reply with nothing of its own falls back
to the network-free digest (WARNING logged, ``fallback_reason`` names the shape); a reply
whose rest is the model's own prose is cleaned of what it wrapped or copied.
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from window_budget import (
    AssistantMessage,
    DigestMessage,
    Model,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
)
from window_budget.contract import Context, SummarizeDeps, Summary
from window_budget.pipeline.summarize import (
    CONDENSER_BRIEF,
    DIGEST_TEMPLATE,
    FRAMING_LINES,
    PINNED_HEADING,
    check_digest,
    ledger_of,
    summarize_sync,
)
from window_budget.pipeline.summarize import _flow as summarize_module
from window_budget.testing import ScriptedCompleter

ROOT = "/srv/app"
ERROR = "** (CompileError) lib/annotation.ex:12: undefined function ledger_entry/1"


def head() -> list:
    return [
        UserMessage("Move billing to the ledger API. Never push to main."),
        AssistantMessage(
            (ToolCallBlock("e1", "Edit", {"file_path": f"{ROOT}/lib/annotation.ex"}),)
        ),
        ToolResultMessage("e1", "Edit", "ok"),
        AssistantMessage((ToolCallBlock("b1", "Bash", {"command": "mix test"}),)),
        ToolResultMessage("b1", "Bash", ERROR, is_error=True),
        AssistantMessage("Switched to the ledger client because the old API is deprecated."),
    ]


# What a good model writes for head(): every key fact, in its own words.
GOOD = """\
# Objective
Move billing to the ledger API.

# Guardrails
Never push to main.

# Status
## Shipped
- edited `lib/annotation.ex`
## Active
none
## Stuck
- `mix test` fails: undefined function ledger_entry/1 in lib/annotation.ex:12

# Rationale
Switched to the ledger client because the old API is deprecated.

# Plan
1. Define ledger_entry/1.

# Carryover
none"""

Reply = str | Callable[[Context], str]


def run(reply: Reply, messages: list | None = None) -> tuple[Summary, ScriptedCompleter]:
    fake = ScriptedCompleter([reply])
    # A record large enough for the whole ledger: ledger_of(message) is the one audited.
    deps = SummarizeDeps(complete_sync=fake.sync, model=Model("m", 64_000), record_tokens=100_000)
    return summarize_sync(messages or head(), deps), fake


def body(summary: Summary) -> str:
    """The digest without its header line."""
    return summary.text.split("\n\n", 1)[1]


def pins_sections(text: str) -> int:
    return len(re.findall(r"^\s*#*\s*pinned facts\s*$", text, re.IGNORECASE | re.MULTILINE))


_TAG_RE = re.compile(r"<\s*/?\s*(?:scrollback|carried-digest)", re.IGNORECASE)


def has_prompt_tag(text: str) -> bool:
    folded = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return _TAG_RE.search(unicodedata.normalize("NFKC", folded).casefold()) is not None


def logged_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def assert_fell_back(summary: Summary, reason: str, caplog: pytest.LogCaptureFixture) -> None:
    assert summary.fallback
    assert reason in (summary.fallback_reason or "")
    assert summary.audit is None
    assert "Move billing to the ledger API." in summary.text  # the network-free digest
    assert any(reason in w for w in logged_warnings(caplog))


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(summarize_module, "_WARNED", set())
    caplog.set_level(logging.DEBUG, logger="window_budget")


# ------------------------------------------------------------------ failed summaries


def test_a_template_echo_is_a_failed_summary(caplog: pytest.LogCaptureFixture) -> None:
    # The 0.5B shape: every heading followed by its own description, in 6 of 6 calls.
    echo = DIGEST_TEMPLATE.split("\n", 1)[1]
    summary, _ = run(echo)
    assert_fell_back(summary, "reply echoed the prompt", caplog)
    assert "What the user wants overall" not in summary.text
    assert "Constraints, preferences and prohibitions" not in summary.text


def test_a_prompt_echo_is_a_failed_summary(caplog: pytest.LogCaptureFixture) -> None:
    # The whole request back: brief, framing, the scrollback in its tags, the template.
    def echo(context: Context) -> str:
        return f"{context.system_prompt}\n\n{context.messages[0].content}"

    summary, _ = run(echo)
    assert_fell_back(summary, "reply echoed the prompt", caplog)
    assert not has_prompt_tag(summary.text)


def test_a_reply_with_no_key_fact_is_a_failed_summary(caplog: pytest.LogCaptureFixture) -> None:
    summary, _ = run("# Objective\nKeep things tidy.\n\n# Plan\nContinue with the task.")
    assert_fell_back(summary, "reply held none of the 6 key facts", caplog)


def test_a_reply_of_nothing_but_thinking_is_a_failed_summary(
    caplog: pytest.LogCaptureFixture,
) -> None:
    summary, _ = run("<think>\nThe user wants a digest. Let me list the files")  # cut off
    assert_fell_back(summary, "reply held nothing but a thinking block", caplog)


# ------------------------------------------------------------------ cleaned replies


@pytest.mark.parametrize(
    "wrapped",
    [
        f"<think>\nThe user wants a digest.\n# Objective\nmaybe the loader?\n</think>\n{GOOD}",
        f"<thinking>Headings first.</thinking>\n\n{GOOD}",
        f"Okay, headings.\n</think>\n{GOOD}",  # the opening tag was in the chat template
        f"<|im_start|>assistant\n{GOOD}<|im_end|>\n<|im_start|>user\nthanks<|im_end|>",
    ],
    ids=["think", "thinking", "orphan-close", "chat-tokens"],
)
def test_thinking_and_chat_tokens_are_stripped(wrapped: str) -> None:
    summary, _ = run(wrapped)
    assert not summary.fallback
    assert body(summary) == GOOD
    assert summary.audit is not None
    assert summary.audit.found == summary.audit.checked


@pytest.mark.parametrize(
    "wrapped",
    [
        f"```markdown\n{GOOD}\n```",
        f"Here is the digest:\n```\n{GOOD}\n```\n",
        f"<scrollback>\n{GOOD}\n</scrollback>",
        f"< Carried-Digest >\n{GOOD}\n</ carried-digest>",
    ],
    ids=["fence", "fence-after-a-preamble", "scrollback-tags", "carried-tags"],
)
def test_a_fence_or_the_prompts_tags_around_the_reply_are_stripped(wrapped: str) -> None:
    summary, _ = run(wrapped)
    assert not summary.fallback
    assert body(summary) == GOOD
    assert "```" not in summary.text
    assert not has_prompt_tag(summary.text)


def test_echoed_lines_are_dropped_when_the_rest_is_the_models_own() -> None:
    reply = GOOD.replace(
        "# Guardrails\n",
        "# Guardrails\nConstraints, preferences and prohibitions the user stated.\n",
    )
    summary, _ = run(reply)
    assert not summary.fallback
    assert body(summary) == GOOD


# ------------------------------------------------------------- the carried digest


def first_digest() -> DigestMessage:
    """A digest written by a forgetful model: its objective, then the audit's pins."""
    first, _ = run("# Objective\nMove billing to the ledger API.")
    assert pins_sections(first.text) == 1
    assert isinstance(first.message, DigestMessage)
    return first.message


def next_turns() -> list:
    return [
        first_digest(),
        UserMessage("Now the exporter, ticket LED-42."),
        AssistantMessage((ToolCallBlock("e2", "Edit", {"file_path": f"{ROOT}/lib/exporter.ex"}),)),
        ToolResultMessage("e2", "Edit", "ok"),
    ]


def carried_of(context: Context) -> str:
    prompt = str(context.messages[0].content)
    return prompt.split("<carried-digest>\n", 1)[1].split("\n</carried-digest>", 1)[0]


def test_copied_pins_sections_are_dropped_and_not_counted_as_found() -> None:
    # The 1.5B shape: its own digest, then the carried pins twice and a closing tag.
    own = "# Status\n## Shipped\n- edited `lib/exporter.ex` for LED-42"

    def copying(context: Context) -> str:
        carried = carried_of(context)
        pins = carried.split(f"{PINNED_HEADING}\n", 1)[1]
        objective = carried.split(f"\n\n{PINNED_HEADING}", 1)[0]
        return (
            f"{objective}\n\n{own}\n\n{PINNED_HEADING}\n{pins}\n</carried-digest>\n\n"
            f"{PINNED_HEADING}\n{pins}"
        )

    summary, _ = run(copying, next_turns())
    assert not summary.fallback
    assert pins_sections(summary.text) == 1
    assert summary.text.count("Never push to main.") == 1  # pinned once, by the audit
    assert not has_prompt_tag(summary.text)
    audit = summary.audit
    assert audit is not None
    ledger = ledger_of(summary.message)
    assert ledger is not None
    # Found: only what its own lines state; the objective it copied is held, not found.
    assert audit.found == check_digest(own, ledger).found == 2
    assert audit.copied == 1
    assert audit.found + audit.copied + audit.appended + audit.left_out == audit.checked


def test_a_reply_that_only_copies_the_carried_digest_is_a_failed_summary(
    caplog: pytest.LogCaptureFixture,
) -> None:
    summary, _ = run(carried_of, next_turns())
    assert summary.fallback
    assert "reply copied the carried digest" in (summary.fallback_reason or "")
    assert any("copied the carried digest" in w for w in logged_warnings(caplog))


# ------------------------------------------------------------- invented, objective


def test_an_invented_near_miss_path_is_flagged_and_the_real_one_pinned() -> None:
    reply = GOOD.replace("`lib/annotation.ex`", "`lib/annotation.exs`").replace(
        " in lib/annotation.ex:12", ""
    )
    summary, _ = run(reply)
    assert not summary.fallback
    pinned = summary.text.split(f"{PINNED_HEADING}\n", 1)[1]
    assert "edited `lib/annotation.ex`" in pinned  # the near miss does not state the real path
    assert "- edited `lib/annotation.exs` (not in the transcript: `lib/annotation.exs`)" in (
        summary.text
    )
    assert summary.audit is not None
    assert summary.audit.invented == ("lib/annotation.exs",)
    assert "not in the transcript: lib/annotation.exs" in str(summary.audit)


def test_names_from_the_transcript_are_not_flagged() -> None:
    summary, _ = run(GOOD)
    assert summary.audit is not None
    assert summary.audit.invented == ()
    assert "not in the transcript" not in summary.text


def test_the_objective_comes_from_the_ledger_when_the_model_disagrees() -> None:
    reply = GOOD.replace("Move billing to the ledger API.", "Refactor the codebase for speed.")
    summary, _ = run(reply)
    assert not summary.fallback
    assert "Refactor the codebase" not in summary.text
    assert body(summary).startswith("# Objective\nMove billing to the ledger API.\n\n# Guardrails")
    audit = summary.audit
    assert audit is not None
    assert audit.objective_replaced
    assert audit.found == audit.checked - 1  # the objective is the ledger's, not the model's
    assert audit.appended == 1
    assert PINNED_HEADING not in summary.text  # put back in its section, not pinned twice


# ------------------------------------------------------------------ the property

_INSTRUCTIONS = [
    line
    for text in (DIGEST_TEMPLATE, FRAMING_LINES["session"], *CONDENSER_BRIEF.split(". "))
    for line in text.split("\n")
    if line.strip()
]
# Facts of next_turns() in words of the model's own; not bullets, which would join a pins
# section drawn just before them (and be dropped with it).
_OWN = [
    "Own: the exporter lives in lib/exporter.ex now.",
    "Own: LED-42 is the exporter ticket.",
    "Own: never push to main, the user said.",
    "Own: lib/annotation.ex still fails mix test.",
]
_TAGS = [
    "<scrollback>",
    "</scrollback>",
    "</carried-digest>",
    "< /Carried-Digest >",
    "<SCROLLBACK >",
]
# Text that states no fact and forms no tag, token or fence (no letters of those words, no |).
_JUNK = st.text(alphabet="xyzq0123456789 #-*<>/.:!", max_size=30)
_PIECE = st.one_of(
    st.tuples(st.just("instr"), st.integers(0, 10_000)),
    st.tuples(st.just("carried"), st.integers(0, 10_000)),
    st.tuples(st.just("scroll"), st.integers(0, 10_000)),
    st.tuples(st.just("pins"), st.integers(0, 10_000)),
    st.tuples(st.just("tag"), st.integers(0, 10_000)),
    st.tuples(st.just("own"), st.integers(0, 10_000)),
    st.tuples(st.just("junk"), _JUNK),
)
_WRAP = st.sampled_from(["", "think", "fence", "chat"])


@functools.cache
def _turns() -> tuple:
    return tuple(next_turns())


def _build(pieces: list[tuple[str, object]], wrap: str) -> tuple[Callable[[Context], str], list]:
    """A reply made of ``pieces`` read off the real prompt, and the lines of the model's own."""
    own: list[str] = []

    def reply(context: Context) -> str:
        prompt = str(context.messages[0].content)
        carried = carried_of(context).split("\n")
        scroll = prompt.split("<scrollback>\n", 1)[1].split("\n</scrollback>", 1)[0].split("\n")
        pins = [ln for ln in carried if ln.startswith("- ")]
        lines: list[str] = []
        for kind, arg in pieces:
            if kind == "junk":
                lines.append(str(arg))
                own.append(str(arg))
                continue
            assert isinstance(arg, int)
            pick = {"instr": _INSTRUCTIONS, "carried": carried, "scroll": scroll}.get(kind)
            if pick is not None:
                lines.append(pick[arg % len(pick)])
                if kind == "instr" and pick[arg % len(pick)].startswith("#"):
                    own.append(pick[arg % len(pick)])  # a heading adds its words too
            elif kind == "pins":
                lines += [PINNED_HEADING, *pins[: 1 + arg % len(pins)]]
            elif kind == "tag":
                lines.append(_TAGS[arg % len(_TAGS)])
            else:
                lines.append(_OWN[arg % len(_OWN)])
                own.append(_OWN[arg % len(_OWN)])
        text = "\n".join(lines)
        return {
            "": text,
            "think": f"<think>{text[:40]}</think>\n{text}",
            "fence": f"```markdown\n{text}\n```",
            "chat": f"<|im_start|>assistant\n{text}<|im_end|>",
        }[wrap]

    return reply, own


@given(pieces=st.lists(_PIECE, min_size=1, max_size=24), wrap=_WRAP)
def test_whatever_the_model_replies_the_digest_keeps_its_shape(
    pieces: list[tuple[str, object]], wrap: str
) -> None:
    reply, own = _build(pieces, wrap)
    summary, _ = run(reply, list(_turns()))
    assert pins_sections(summary.text) <= 1
    assert not has_prompt_tag(summary.text)
    if summary.fallback:
        return
    audit = summary.audit
    assert audit is not None
    ledger = ledger_of(summary.message)
    assert ledger is not None
    # Found counts the model's own lines only: never a copied line, a pin or an echo, nor a
    # rule it wrote under Guardrails that the user never stated (dropped, and reported).
    kept = [line for line in own if line not in audit.invented_rules]
    assert audit.found == check_digest("\n".join(kept), ledger).found


def test_a_repetition_loop_is_kept_once() -> None:
    # Qwen2.5-Coder 1.5B over a real SWE-agent run: one phrase 21 times in the objective, and
    # one guardrail line 21 times.
    phrase = "the NumPy pixel data handler requires the Pixel Representation attribute "
    rule = "- The user said: never push to main."
    looped = GOOD.replace(
        "Move billing to the ledger API.", "Move billing to the ledger API. " + phrase * 21
    ).replace("Never push to main.", "Never push to main.\n" + "\n".join([rule] * 21))
    summary, _ = run(looped)
    text = body(summary)
    assert not summary.fallback
    assert text.count(phrase.strip()) == 1
    assert text.count(rule) == 1


def test_a_name_the_length_cap_split_is_not_flagged_as_invented() -> None:
    # A reply at the cap is cut to the digest's room; the cut must not turn the model's whole
    # name into a "new" one (tomllib.TOMLDecodeErro for tomllib.TOMLDecodeError).
    name = "tomllib.TOMLDecodeError"
    messages = [*head(), UserMessage(f"It raised {name} on the fixture.")]
    for width in range(0, 23):  # wherever the cut lands, inside a name or between two
        reply = GOOD + "\n" + "x" * width + " " + " ".join([name] * 400)
        fake = ScriptedCompleter([reply])
        deps = SummarizeDeps(
            complete_sync=fake.sync, model=Model("m", 64_000), max_tokens=300, record_tokens=10**5
        )
        summary = summarize_sync(messages, deps)
        assert summary.audit is not None
        assert summary.audit.invented == (), width


def test_a_run_of_one_character_is_not_a_loop() -> None:
    from window_budget.pipeline.summarize._reply import _unloop

    text = "# Carryover\n- token: " + "x" * 300 + "\n- rule: " + "=" * 80
    assert _unloop(text) == (text, False)


def test_when_not_every_rule_fits_the_newest_are_pinned() -> None:
    # A real SWE-agent run: 12 constraints (11 from the agent's own template) did not fit the
    # pins' room together, and none was pinned.
    rules = [
        UserMessage(f"Never call the payment sandbox number {i} from any of the unit tests.")
        for i in range(40)
    ]
    fake = ScriptedCompleter(["# Objective\nMove billing to the ledger API."])
    deps = SummarizeDeps(
        complete_sync=fake.sync, model=Model("m", 64_000), max_tokens=400, record_tokens=10**5
    )
    summary = summarize_sync([*head(), *rules], deps)
    assert summary.audit is not None
    pinned = body(summary).split("# Pinned facts", 1)[1]
    assert "- constraint: Never call the payment sandbox number 39 " in pinned
    assert "- constraint: Never call the payment sandbox number 0 " not in pinned  # oldest go


def test_every_rule_is_pinned_when_the_prose_gives_way_to_an_eighth() -> None:
    # A real SWE-agent run at 500 tokens: 12 rules and prose stating none of them; beside a
    # quarter of the budget kept for the prose the oldest rule was left out (here 18 rules).
    rules = [
        UserMessage(f"Always rerun the reproduction script number {i} after every edit you make.")
        for i in range(18)
    ]
    steps = "\n".join(f"- step {k} of the work went on as planned" for k in range(60))
    prose = f"# Objective\nMove billing to the ledger API.\n\n# Status\n{steps}"
    fake = ScriptedCompleter([prose])
    deps = SummarizeDeps(
        complete_sync=fake.sync, model=Model("m", 64_000), max_tokens=500, record_tokens=10**5
    )
    summary = summarize_sync([*head(), *rules], deps)
    pinned = body(summary).split("# Pinned facts", 1)[1]
    for i in range(18):
        assert f"script number {i} " in pinned, i
