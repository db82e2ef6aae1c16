"""One usage parser per provider, one usage type: readers, meter and parsers agree."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from window_budget import Usage
from window_budget.budget import (
    MAX_USAGE_TOKENS,
    read_count,
    usage_from_anthropic,
    usage_from_langchain,
    usage_from_openai,
)
from window_budget.errors import UsageError
from window_budget.readers import read_transcript
from window_budget.tools.meter import parse_usage

ANTHROPIC = {
    "input_tokens": 12,
    "output_tokens": 7,
    "cache_read_input_tokens": 900,
    "cache_creation_input_tokens": 40,
}
OPENAI = {
    "prompt_tokens": 1000,
    "completion_tokens": 20,
    "total_tokens": 1020,
    "prompt_tokens_details": {"cached_tokens": 768},
}
LANGCHAIN = {
    "input_tokens": 952,
    "output_tokens": 7,
    "total_tokens": 959,
    "input_token_details": {"cache_read": 900, "cache_creation": 40},
}


def test_each_provider_splits_the_prompt_into_the_same_three_parts() -> None:
    assert usage_from_anthropic(ANTHROPIC) == Usage(12, 7, 900, 40)
    assert usage_from_langchain(LANGCHAIN) == Usage(12, 7, 900, 40)
    assert usage_from_openai(OPENAI) == Usage(232, 20, 768)


def test_the_openai_responses_shape_reports_its_cached_part() -> None:
    responses = {
        "input_tokens": 500,
        "output_tokens": 9,
        "total_tokens": 509,
        "input_tokens_details": {"cached_tokens": 384},
    }
    assert usage_from_openai(responses) == Usage(116, 9, 384)


def test_a_cached_part_above_the_prompt_is_capped_not_negative() -> None:
    raw = {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 50}}
    assert usage_from_openai(raw) == Usage(0, 0, 10)
    assert usage_from_openai(raw, strict=True) == Usage(0, 0, 10)


def test_the_meter_reads_every_provider_through_the_same_parser() -> None:
    assert parse_usage(ANTHROPIC) == usage_from_anthropic(ANTHROPIC)
    assert parse_usage(LANGCHAIN) == usage_from_langchain(LANGCHAIN)
    assert parse_usage(OPENAI) == usage_from_openai(OPENAI)


@pytest.mark.parametrize(
    ("fmt", "reply", "parse", "raw"),
    [
        (
            "anthropic",
            {"role": "assistant", "content": "hello", "usage": ANTHROPIC},
            usage_from_anthropic,
            ANTHROPIC,
        ),
        (
            "openai",
            {"role": "assistant", "content": "hello", "usage": OPENAI},
            usage_from_openai,
            OPENAI,
        ),
        (
            "langchain",
            {"type": "ai", "data": {"content": "hello", "usage_metadata": LANGCHAIN}},
            usage_from_langchain,
            LANGCHAIN,
        ),
    ],
)
def test_the_readers_read_usage_through_the_same_parser(
    fmt: str, reply: dict[str, Any], parse: Any, raw: dict[str, Any]
) -> None:
    user = (
        {"type": "human", "data": {"content": "hi"}}
        if fmt == "langchain"
        else {"role": "user", "content": "hi"}
    )
    doc = json.dumps([user, reply])
    transcript = read_transcript(io.StringIO(doc), format=fmt)
    assert transcript.reported_usage == parse(raw)


def test_the_meter_reading_is_the_core_usage_type() -> None:
    reading = parse_usage(ANTHROPIC)
    assert isinstance(reading, Usage)
    assert reading.used_tokens == reading.prompt_tokens == 952


@pytest.mark.parametrize("value", ["12", True, [3], -4, 2.5])
def test_a_garbled_count_reads_as_zero_leniently_and_raises_strictly(value: Any) -> None:
    raw = {"input_tokens": value, "output_tokens": 1}
    lenient = usage_from_anthropic(raw)
    assert lenient is not None
    assert lenient.input_tokens == (2 if value == 2.5 else 0)
    with pytest.raises(UsageError, match="input_tokens"):
        usage_from_anthropic(raw, strict=True, where="result event")


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 1e300, MAX_USAGE_TOKENS + 1])
@pytest.mark.parametrize("strict", [False, True])
def test_a_corrupt_count_raises_in_either_mode(value: float, strict: bool) -> None:
    with pytest.raises(UsageError, match="prompt_tokens"):
        usage_from_openai({"prompt_tokens": value}, strict=strict)


def test_a_details_field_that_is_not_a_mapping() -> None:
    raw = {"input_tokens": 10, "input_token_details": "lots"}
    assert usage_from_langchain(raw) == Usage(10)
    with pytest.raises(UsageError, match="input_token_details"):
        usage_from_langchain(raw, strict=True)


def test_langchain_cache_figures_above_the_input_are_refused_strictly() -> None:
    raw = {"input_tokens": 10, "input_token_details": {"cache_read": 30}}
    assert usage_from_langchain(raw) == Usage(0, 0, 30)
    with pytest.raises(UsageError, match="exceed input_tokens"):
        usage_from_langchain(raw, strict=True)


def test_not_a_mapping_reports_no_usage() -> None:
    for parse in (usage_from_anthropic, usage_from_openai, usage_from_langchain):
        assert parse(None) is None
        assert parse([1, 2]) is None
    assert read_count({}, "input_tokens") == 0


counts = st.integers(min_value=0, max_value=MAX_USAGE_TOKENS)


@given(fresh=counts, read=counts, created=counts, output=counts)
def test_the_three_shapes_of_one_request_parse_to_one_usage(
    fresh: int, read: int, created: int, output: int
) -> None:
    total = fresh + read + created
    if total > MAX_USAGE_TOKENS:
        return
    expected = Usage(fresh, output, read, created)
    assert (
        usage_from_anthropic(
            {
                "input_tokens": fresh,
                "output_tokens": output,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": created,
            },
            strict=True,
        )
        == expected
    )
    assert (
        usage_from_langchain(
            {
                "input_tokens": total,
                "output_tokens": output,
                "input_token_details": {"cache_read": read, "cache_creation": created},
            },
            strict=True,
        )
        == expected
    )
    # OpenAI has no cache-creation figure: the written part is inside the uncached input.
    openai_usage = usage_from_openai(
        {
            "prompt_tokens": total,
            "completion_tokens": output,
            "prompt_tokens_details": {"cached_tokens": read},
        },
        strict=True,
    )
    assert openai_usage == Usage(fresh + created, output, read)
    assert openai_usage is not None
    assert openai_usage.prompt_tokens == expected.prompt_tokens
