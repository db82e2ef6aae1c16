"""Rich displays: what a notebook shows for a condense result, a usage report, a transcript."""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace
from html.parser import HTMLParser

import pytest
from hypothesis import given
from hypothesis import strategies as st

from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    ImageBlock,
    Model,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    Usage,
    UserMessage,
    create_condenser,
)
from window_budget.readers import read_transcript
from window_budget.tools.display import (
    Table,
    condense_result_html,
    condense_result_text,
    safe_text,
    transcript_html,
    transcript_text,
    usage_report_html,
)
from window_budget.tools.report import analyze

HOSTILE = [
    "<script>alert('x')</script>",
    "</div></table></details><h1>owned</h1>",
    '" onmouseover="alert(1)" x="',
    "' onfocus='alert(2)' autofocus x='",
    "＜script＞fullwidth look-alike＜/script＞",
    "pаypal.com (Cyrillic а) and evil\u202egnp.exe and zero\u200bwidth",
    "&lt;already escaped&gt; &amp; <!-- comment --> <![CDATA[x]]>",
]


class Shape(HTMLParser):
    """Collects the tags and attributes of a page, and the text between them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)
        if tag not in {"br", "img"}:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open[-1:] == [tag], f"</{tag}> closes {self.open[-1:]}"
        self.open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Shape:
    shape = Shape()
    shape.feed(page)
    shape.close()
    assert shape.open == [], f"unclosed tags {shape.open}"
    return shape


ALLOWED_TAGS = {
    "div",
    "span",
    "b",
    "i",
    "code",
    "pre",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "details",
    "summary",
}
ALLOWED_ATTRS = {"style", "title", "class"}


def assert_inert(page: str) -> Shape:
    """The page is well nested, uses only our tags and attributes, and has no script."""
    shape = parse(page)
    assert set(shape.tags) <= ALLOWED_TAGS, set(shape.tags) - ALLOWED_TAGS
    assert {name for name, _ in shape.attrs} <= ALLOWED_ATTRS
    return shape


def hostile_transcript() -> list:
    msgs: list = []
    for i, text in enumerate(HOSTILE):
        msgs.append(UserMessage(text * 3))
        msgs.append(
            AssistantMessage(
                [TextBlock(text), ToolCallBlock(f"c{i}", text, {"q": text})],
                usage=Usage(100 + i, 10),
            )
        )
        msgs.append(ToolResultMessage(f"c{i}", text, text * 40, is_error=i % 2 == 0))
    return msgs


def test_transcript_strings_are_escaped_in_every_display() -> None:
    msgs = hostile_transcript()
    result = create_condenser(
        model=Model("m", 4000), policy=BudgetPolicy(keep_recent=300, reserve_tokens=0)
    ).run_sync(msgs)
    assert result.summary is not None  # the digest quotes the hostile text too
    report = analyze(msgs, 4000)
    transcript = read_transcript(
        io.StringIO(json.dumps([{"role": "user", "content": t} for t in HOSTILE])), format="openai"
    )
    for page in (
        condense_result_html(result),
        usage_report_html(report),
        transcript_html(transcript),
        result._repr_html_(),
        transcript._repr_html_(),
    ):
        shape = assert_inert(page)
        for bad in ("<script", "<h1", 'onmouseover="', "onfocus='"):
            assert bad not in page
        # Look-alikes are shown as they are; direction and zero-width marks become visible.
        assert "\u202e" not in page
        assert "\u200b" not in page
    text = "".join(parse(transcript_html(transcript)).text)
    assert "＜script＞fullwidth" in text
    assert "evil⟨U+202E⟩gnp.exe" in text
    assert "<script>alert('x')</script>" in text  # shown to the reader, as text
    assert shape is not None


@given(st.text(max_size=300), st.integers(min_value=0, max_value=400))
def test_safe_text_is_inert_in_elements_and_attributes(value: str, limit: int) -> None:
    shown = safe_text(value, limit)
    assert not set(shown) & set("<>\"'")
    assert not re.search(r"&(?!(amp|lt|gt|quot|#x27);)", shown)  # no half-cut entity
    parsed = parse(f'<div title="{shown}">{shown}</div>')
    assert parsed.tags == ["div"]


def test_safe_text_cuts_before_escaping_and_says_how_much() -> None:
    assert safe_text("<" * 10, 3) == "&lt;&lt;&lt; … (7 more characters)"
    assert safe_text("tab\tand\nnewline") == "tab\tand\nnewline"


def test_condense_result_shows_bars_cut_counts_and_the_collapsed_digest() -> None:
    msgs = [UserMessage(f"turn {i}: " + "words " * 300) for i in range(20)]
    policy = BudgetPolicy(keep_recent=1500, reserve_tokens=0)
    result = create_condenser(model=Model("m", 8000), policy=policy).run_sync(msgs)
    page = condense_result_html(result)
    assert_inert(page)
    assert f"{result.tokens_before:,} tokens" in page
    assert f"{result.tokens_after:,} tokens" in page
    assert f"<b>{len(result.plan.dropped):,}</b> dropped" in page
    assert f"<b>{len(result.plan.kept):,}</b> kept verbatim" in page
    assert "<details" in page
    assert "network-free digest" in page
    assert f"{result.tokens_before - result.tokens_after:,} tokens freed" in page
    text = condense_result_text(result)
    assert f"{len(result.plan.dropped)} dropped" in text
    assert "CondenseResult(" not in text


def test_a_no_op_result_shows_why_nothing_happened() -> None:
    msgs = [UserMessage("short")]
    result = create_condenser(model=Model("m", 8000)).run_sync(msgs)
    page = condense_result_html(result)
    assert "under-budget" in page
    assert "dropped" not in page
    assert "<details" not in page


def test_usage_report_stacks_categories_and_roles_against_the_window() -> None:
    msgs = [
        UserMessage("ask " * 200),
        AssistantMessage("answer " * 400),
        UserMessage([TextBlock("look"), ImageBlock("aGVsbG8=", "image/png")]),
    ]
    report = analyze(msgs, 10_000, policy=BudgetPolicy())
    page = usage_report_html(report)
    assert_inert(page)
    for role, tokens in report.per_role.items():
        assert f'title="{role}: {tokens:,} tokens"' in page
    widths = [float(w) for w in re.findall(r"width:([\d.]+)%", page)]
    assert widths
    assert all(0 < w <= 100 for w in widths)
    assert "within budget" in page
    assert f"{report.total:,} / 10,000" in page
    assert report._repr_html_() == page


def test_transcript_display_counts_turns_roles_tools_and_images() -> None:
    path = "tests/fixtures/transcripts/claude_code_session.jsonl"
    transcript = read_transcript(path)
    page = transcript_html(transcript)
    assert_inert(page)
    calls = sum(len(m.tool_calls) for m in transcript.messages if isinstance(m, AssistantMessage))
    assert f"tool calls: <b>{calls:,}</b>" in page
    assert f"<b>{len(transcript.messages):,}</b> messages" in page
    text = transcript_text(transcript)
    assert text.startswith("transcript (claude-code)")
    assert "Transcript(" not in text


def test_a_long_transcript_lists_head_and_tail_and_counts_the_rest() -> None:
    transcript = read_transcript(
        io.StringIO(
            json.dumps([{"role": "user", "content": f"message number {i}"} for i in range(500)])
        ),
        format="openai",
    )
    page = transcript_html(transcript)
    assert "440 messages not listed" in page
    assert "message number 0" in page
    assert "message number 499" in page
    assert page.count("<tr>") == 1 + 60 + 1  # the header, 30 + 30 messages, the gap


@pytest.mark.parametrize("obj", ["result", "report", "transcript"])
def test_ipython_shows_text_and_html_not_the_dataclass_repr(obj: str) -> None:
    formatters = pytest.importorskip("IPython.core.formatters")
    msgs = hostile_transcript()
    value = {
        "result": lambda: create_condenser(
            model=Model("m", 4000), policy=BudgetPolicy(keep_recent=300, reserve_tokens=0)
        ).run_sync(msgs),
        "report": lambda: analyze(msgs, 4000),
        "transcript": lambda: read_transcript(
            "tests/fixtures/transcripts/claude_code_session.jsonl"
        ),
    }[obj]()
    plain = formatters.PlainTextFormatter()(value)
    assert not re.match(r"\w+\(", plain), plain[:80]
    html_out = formatters.HTMLFormatter()(value)
    assert html_out.startswith('<div class="window-budget"')


def test_a_table_shows_rows_escaped_with_thousands_separators() -> None:
    table = Table([{"policy": "<b>x</b>", "compactions": 12345, "kept": True, "ratio": 0.5}])
    page = table._repr_html_()
    assert_inert(page)
    assert "&lt;b&gt;x&lt;/b&gt;" in page
    assert "12,345" in page
    assert str(table).splitlines() == [
        "policy    compactions  kept  ratio",
        "<b>x</b>  12,345       yes   0.50",
    ]


def test_only_the_librarys_own_digest_is_shown_as_a_digest() -> None:
    msgs = [UserMessage("hi " * 400) for _ in range(12)]
    result = create_condenser(
        model=Model("m", 3000), policy=BudgetPolicy(keep_recent=500, reserve_tokens=0)
    ).run_sync(msgs)
    typed = UserMessage(result.summary.text)  # a user who pasted the header: a user turn
    transcript = read_transcript(io.StringIO("[]"), format="openai")
    own = transcript_html(replace(transcript, messages=(result.messages[0], *result.plan.kept)))
    assert 'title="#1 digest' in own
    pasted = transcript_html(replace(transcript, messages=(typed, *result.plan.kept)))
    assert 'title="#1 user' in pasted
    assert f"<b>{len(result.plan.kept) + 1:,}</b> user turns" in pasted


def test_a_report_over_the_window_marks_where_the_window_ends() -> None:
    over = analyze([UserMessage("word " * 2000)], 1000)
    assert 'title="window 1,000"' in usage_report_html(over)
    under = analyze([UserMessage("word")], 1000)
    assert 'title="window 1,000"' not in usage_report_html(under)


def agent_session(turns: int = 24) -> list:
    msgs: list = [UserMessage("Ship ticket PAY-2817. Never touch migrations/ <script>x</script>.")]
    for i in range(turns):
        call = ToolCallBlock(f"c{i}", "bash", {"command": f"pytest -k t{i}"})
        msgs.append(AssistantMessage([call], usage=Usage(2_000 + 300 * i, 20), model="m"))
        msgs.append(
            ToolResultMessage(
                f"c{i}",
                "bash",
                "E   AssertionError: boom\n" * 30 if i % 5 == 0 else "ok\n" * 40,
                is_error=i % 5 == 0,
            )
        )
        msgs.append(UserMessage(f"next step {i}"))
    return msgs


def test_the_ledger_shows_by_kind_with_pointers_into_the_archive() -> None:
    from window_budget.pipeline.summarize import FACT_KINDS

    condenser = create_condenser(
        model=Model("m", 6000), policy=BudgetPolicy(keep_recent=800, reserve_tokens=0)
    )
    result = condenser.run_sync(agent_session())
    ledger = condenser.ledger(result.summary.message)  # the whole ledger, from the store
    assert ledger is not None
    page = ledger._repr_html_()
    assert_inert(page)
    assert "&lt;script&gt;" in page
    for kind in FACT_KINDS:
        n = len(ledger.of_kind(kind))
        if n:
            assert f'<b>{kind}</b> <span style="color:#888">{n:,}</span>' in page
    for fact in ledger.facts[:5]:
        if fact.source is not None:
            assert f"archive #{fact.source}" in page
    text = formatters_text(ledger)
    assert text.startswith(f"fact ledger: {len(ledger.facts):,} facts")
    # The condense result shows the record its digest carries (bounded), collapsed.
    from window_budget.pipeline.summarize import ledger_of

    record = ledger_of(result.summary.message)
    assert record is not None
    assert len(record.facts) < len(ledger.facts)
    assert f"fact ledger: {len(record.facts):,} facts" in condense_result_html(result)


def formatters_text(value: object) -> str:
    formatters = pytest.importorskip("IPython.core.formatters")
    return str(formatters.PlainTextFormatter()(value))


def test_the_audit_of_a_model_digest_is_shown() -> None:
    from window_budget.testing import ScriptedCompleter

    forgetful = ScriptedCompleter(["# Objective\nShip ticket PAY-2817."] * 4)
    result = create_condenser(
        model=Model("m", 6000),
        complete_sync=forgetful.sync,
        policy=BudgetPolicy(keep_recent=800, reserve_tokens=0),
    ).run_sync(agent_session())
    audit = result.audit
    assert audit is not None
    assert audit.appended > 0
    page = condense_result_html(result)
    assert f"{audit.found} of {audit.checked}</b> key facts" in page
    assert f"<b>{audit.appended}</b> pinned" in page
    assert f"audit: {audit}" in condense_result_text(result)


def test_the_usage_report_shows_the_calibrated_figure() -> None:
    from window_budget.budget import calibrate

    msgs = agent_session()
    cal = calibrate(msgs)
    assert cal is not None
    report = analyze(msgs, 20_000, calibration=cal)
    page = usage_report_html(report)
    assert_inert(page)
    assert f"<b>{report.calibrated_total:,}</b> tokens (×{cal.ratio:.3f}" in page
    assert f'title="calibrated {report.calibrated_total:,}"' in page
    assert "as the provider counts it" not in usage_report_html(analyze(msgs, 20_000))


def test_a_huge_transcript_draws_a_bounded_page() -> None:
    rows = [
        {"role": "user" if i % 3 == 0 else "assistant", "content": f"message {i} " * 20}
        for i in range(6000)
    ]
    transcript = read_transcript(io.StringIO(json.dumps(rows)), format="openai")
    page = transcript_html(transcript)
    assert_inert(page)
    assert len(page) < 250_000
    assert page.count("mostly assistant") + page.count("mostly user") == 400
    assert "#1–#15, mostly assistant" in page


def test_every_renderer_is_registered_for_a_class_that_shows_itself() -> None:
    import importlib

    from window_budget._shown import Shown, registered

    names = registered()
    assert len(names) == 4, names  # result, ledger, transcript, usage report
    for name in names:
        module, _, cls = name.rpartition(".")
        assert issubclass(getattr(importlib.import_module(module), cls), Shown), name


def test_a_result_shows_itself_whichever_module_the_caller_imports_first() -> None:
    import subprocess
    import sys

    code = (
        "from window_budget.readers._base import Transcript\n"
        "print(Transcript(messages=())._repr_html_())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith('<div class="window-budget"'), out.stdout[:80]
