"""One cut-with-marker helper and one marker: every shortening in the library reads the same."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from window_budget import ToolResultMessage, UserMessage
from window_budget.budget import count_text
from window_budget.pipeline import SHORTENED_MARKER, cut_text, fit_messages, shorten_message
from window_budget.pipeline.summarize import clamp_text, cut_to_tokens
from window_budget.tools.assemble import assemble_prompt

MARKER_RE = re.compile(r"\[… ([\d,]+) chars removed by window-budget …\]")


def _cut_count(text: str) -> int:
    found = MARKER_RE.findall(text)
    assert len(found) == 1, text
    return int(found[0].replace(",", ""))


def test_a_text_that_fits_comes_back_as_itself() -> None:
    text = "short"
    assert cut_text(text, 5) is text
    assert cut_to_tokens(text, 100) is text


def test_head_and_tail_are_kept_and_the_marker_counts_the_cut() -> None:
    text = "HEAD" + "x" * 5000 + "TAIL"
    out = cut_text(text, 300)
    assert out.startswith("HEAD")
    assert out.endswith("TAIL")
    assert _cut_count(out) == len(text) - 300
    assert _cut_count(cut_text("y" * 12_345, 45)) == 12_300  # shown as 12,300


def test_head_only_cut_ends_with_the_marker() -> None:
    out = cut_text("0123456789", 4, keep_tail=False)
    assert out == "0123" + SHORTENED_MARKER.replace("{n}", "6")


@given(text=st.text(min_size=1, max_size=400), keep=st.integers(0, 400), tail=st.booleans())
def test_nothing_but_the_cut_changes(text: str, keep: int, tail: bool) -> None:
    out = cut_text(text, keep, keep_tail=tail)
    if len(text) <= keep:
        assert out == text
        return
    match = list(MARKER_RE.finditer(out))[-1 if not tail else 0]
    # With a tail, the marker sits after the head; the head is a prefix of the text.
    head, rest = out[: match.start()], out[match.end() :]
    if tail:
        assert out.startswith(head)
    assert text.startswith(head)
    assert text.endswith(rest)
    assert len(head) + len(rest) == keep
    assert int(match.group(1).replace(",", "")) == len(text) - keep


@given(
    text=st.text(alphabet="ab \n{}é漢", min_size=0, max_size=3000),
    max_tokens=st.integers(1, 400),
    tail=st.booleans(),
)
def test_cut_to_tokens_always_fits(text: str, max_tokens: int, tail: bool) -> None:
    out = cut_to_tokens(text, max_tokens, keep_tail=tail)
    assert count_text(out) <= max_tokens
    if out != text and out:
        assert _cut_count(out) > 0


def test_every_shortening_uses_the_one_marker() -> None:
    long = "line of output\n" * 2_000
    outputs = {
        "fit": str(fit_messages([UserMessage("q"), UserMessage(long)], 300)[0][1].content),
        "shorten_message": str(
            shorten_message(ToolResultMessage("c1", "bash", long), 200).content  # type: ignore[union-attr]
        ),
        "clamp_text": clamp_text(long, 500),
        "cut_to_tokens": cut_to_tokens(long, 100),
        "assemble": assemble_prompt([(0, "a", "x" * 50), (1, "b", long)], 400).text,
    }
    for where, text in outputs.items():
        assert _cut_count(text) > 0, where
    assert "elided" not in "".join(outputs.values())
    assert "truncated to fit" not in "".join(outputs.values())
