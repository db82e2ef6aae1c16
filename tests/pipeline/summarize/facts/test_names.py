"""Which names the ledger reads from prose, and which of them a short digest keeps."""

from __future__ import annotations

from window_budget import AssistantMessage, UserMessage
from window_budget.budget import count_text
from window_budget.pipeline.summarize import extract_facts, render_ledger


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


def test_a_name_said_again_and_again_outlives_names_said_once() -> None:
    repeated = [f"Tune{w}Curve" for w in ("Wave", "Lane", "Timer")]
    msgs: list = [UserMessage("Balance the game's difficulty.")]
    for _ in range(6):
        msgs.append(AssistantMessage(" ".join(f"Checked {n} again." for n in repeated)))
    for i in range(60):  # later, and each named once
        msgs.append(AssistantMessage(f"Looked at Helper{i}Widget{i} as well."))
    ledger = extract_facts(msgs)
    text = render_ledger(ledger, max_tokens=260)
    assert count_text(text) <= 260
    assert "identifiers more" in text  # room was short: some names were left out
    assert all(n in text for n in repeated), text


def test_a_bare_snake_case_name_is_a_name_as_a_camel_case_one_is() -> None:
    ledger = extract_facts(
        [
            UserMessage("Make the test discovery strict."),
            AssistantMessage(
                "Set python_files and python_classes in pytest.ini, like LoaderConfig does; "
                "specs/apple_books/library_spec.py keeps its name and so does list_books()."
            ),
        ]
    )
    names = {f.text for f in ledger.of_kind("identifier")}
    assert {"python_files", "python_classes", "LoaderConfig"} <= names
    assert "specs/apple_books/library_spec.py" in names
    assert "list_books()" in names
    assert not names & {"apple_books", "library_spec", "list_books"}  # parts of other names


def test_the_names_in_a_list_the_agent_wrote_are_names() -> None:
    ledger = extract_facts(
        [
            UserMessage("Wire the materials."),
            AssistantMessage(
                "Done so far:\n- Added `FlatColorMaterial` to HazardBase\n"
                "- Load it in the constructor of GroundBuilder\n- Set bJustLanded in FinishHop()"
            ),
        ]
    )
    names = {f.text for f in ledger.of_kind("identifier")}
    assert {"FlatColorMaterial", "HazardBase", "GroundBuilder", "FinishHop"} <= names
    assert ledger.of_kind("plan")  # the list is still read as a plan too
