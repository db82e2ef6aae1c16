"""Which names the ledger reads from prose, and which of them a short digest keeps."""

from __future__ import annotations

from window_budget import AssistantMessage, UserMessage
from window_budget.pipeline.summarize import extract_facts


def test_an_absolute_path_in_prose_is_a_name() -> None:
    ledger = extract_facts(
        [
            UserMessage("Tidy the project docs."),
            AssistantMessage("The full notes are in /home/dev/acme/docs/setup-notes.md now."),
        ]
    )
    names = {f.text for f in ledger.of_kind("identifier")}
    assert "/home/dev/acme/docs/setup-notes.md" in names
    assert "home/dev/acme/docs/setup-notes.md" not in names


def test_a_url_is_not_read_again_as_a_path() -> None:
    ledger = extract_facts(
        [UserMessage("See https://example.com/guide/intro.html for the setup steps.")]
    )
    names = {f.text for f in ledger.of_kind("identifier")}
    assert names == {"https://example.com/guide/intro.html"}
