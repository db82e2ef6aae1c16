"""Guardrails a real model wrote that the user never gave are dropped from its digest.

Qwen2.5-Coder 1.5B Instruct, summarizing real sessions (``bench/bench_real_model.py``),
wrote rules under ``# Guardrails`` that no user turn states, kept generation after
generation. Each test scripts a reply of the shape it wrote.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.pipeline.summarize.test_model_replies import GOOD, body, head, run
from window_budget import AssistantMessage, ToolCallBlock, ToolResultMessage, UserMessage
from window_budget.pipeline.summarize import PINNED_HEADING
from window_budget.pipeline.summarize._guardrails import drop_rules, unsupported_rules
from window_budget.pipeline.summarize.facts import Fact, FactLedger

# long_session, all three generations: the agent had said the fixture *quotes* integers.
TOML_RULE = "- The user must fix the TOML fixture for errors to ensure that integers are quoted."
# A SWE-agent run on pydicom: the user never mentioned the script.
SCRIPT_RULE = "- The user must follow the instructions provided in the reproduce script exactly."


def test_a_guardrail_the_user_never_gave_is_dropped() -> None:
    reply = GOOD.replace("Never push to main.", f"- Never push to main.\n{TOML_RULE}")
    summary, _ = run(reply)
    assert not summary.fallback
    text = body(summary)
    assert "fix the TOML fixture" not in text
    assert "- Never push to main." in text  # the user's own rule stays
    assert summary.audit is not None
    assert summary.audit.invented_rules == (TOML_RULE,)
    assert "1 guardrail the user never gave dropped" in str(summary.audit)


def test_the_users_rule_reworded_by_the_model_is_kept() -> None:
    reworded = "- The user must never push anything to the main branch."
    summary, _ = run(GOOD.replace("Never push to main.", reworded))
    assert reworded in body(summary)
    assert summary.audit is not None
    assert summary.audit.invented_rules == ()


def test_with_no_rule_from_the_user_every_rule_of_the_models_is_dropped() -> None:
    # The user typed no rule at all; the model wrote three. "None" lines stay.
    messages = [
        UserMessage("Make the pixel data handler accept float pixel data."),
        AssistantMessage((ToolCallBlock("c1", "Bash", {"command": "python reproduce.py"}),)),
        ToolResultMessage("c1", "Bash", "Script completed successfully, no errors."),
    ]
    rules = [
        SCRIPT_RULE,
        "- The user must ensure that the Dataset object has the correct attributes.",
        "- The user must verify that the script completes successfully without errors.",
    ]
    reply = (
        "# Objective\nMake the pixel data handler accept float pixel data.\n\n# Guardrails\n"
        + "\n".join(rules)
        + "\n- none beyond these\n\n# Status\n## Shipped\n- ran `python reproduce.py`: "
        "Script completed successfully, no errors.\n"
    )
    summary, _ = run(reply, messages)
    text = body(summary)
    assert summary.audit is not None
    assert summary.audit.invented_rules == tuple(rules)
    assert "The user must" not in text
    assert "- none beyond these" in text
    assert "python reproduce.py" in text


def test_a_dropped_rule_does_not_hide_the_users_rule_from_the_audit() -> None:
    # The model replaced the user's rule with one of its own: the real one is pinned.
    summary, _ = run(GOOD.replace("Never push to main.", TOML_RULE))
    pinned = body(summary).split(f"{PINNED_HEADING}\n", 1)[1]
    assert "Never push to main." in pinned
    assert "TOML fixture" not in body(summary)


def test_a_rule_naming_a_file_no_rule_of_the_users_names_is_dropped() -> None:
    # pydicom: the SWE-agent template's rules share "instructions", "file", "provided",
    # "exactly" with this line; the user's rules never name the agent's script.
    template = (
        "If the bug reproduction script requires inputting/reading a specific file, follow "
        "the instructions provided in the issue exactly."
    )
    ledger = FactLedger((Fact("constraint", "k", template, by="user"),))
    line = "- The user must follow the instructions provided in the `reproduce_bug.py` file exactly"
    reworded = "- Follow the instructions provided in the issue exactly when reading a file."
    text = f"# Guardrails\n{line}\n{reworded}"
    assert unsupported_rules(text, ledger) == (line,)


def test_rules_copied_from_the_carried_digest_are_not_the_models() -> None:
    ledger = FactLedger((Fact("constraint", "k", "Never push to main.", by="user"),))
    carried = f"# Guardrails\n{TOML_RULE}"
    text = f"# Objective\nx\n\n# Guardrails\n{TOML_RULE}\n- Never push to main."
    assert unsupported_rules(text, ledger, carried=carried) == ()
    assert unsupported_rules(text, ledger) == (TOML_RULE,)


def test_the_cut_marker_and_the_line_it_cut_short_stay() -> None:
    # Qwen2.5-Coder 1.5B, pydicom generation 3: the reply reached the cap inside a guardrail,
    # and the cut line and the marker after it were dropped as rules the user never gave.
    marker = "[… 800 chars removed by window-budget …]"
    text = f"# Guardrails\n- Never push to main.\n- The user must r\n\n{marker}\n\n{SCRIPT_RULE}"
    ledger = FactLedger((Fact("constraint", "k", "Never push to main.", by="user"),))
    assert unsupported_rules(text, ledger) == (SCRIPT_RULE,)
    assert marker in drop_rules(text, unsupported_rules(text, ledger))


def test_only_the_guardrails_section_is_checked() -> None:
    ledger = FactLedger()
    text = f"# Plan\n{TOML_RULE}\n\n# Guardrails\n{SCRIPT_RULE}\n\n# Carryover\n{SCRIPT_RULE}"
    assert unsupported_rules(text, ledger) == (SCRIPT_RULE,)
    kept = drop_rules(text, (SCRIPT_RULE,))
    assert kept.count(SCRIPT_RULE) == 1  # the Carryover line stays
    assert TOML_RULE in kept


# Two alphabets: no word of one is part of a word of the other, and no word is filler
# ("user", "must", "their" ...): each of those has a letter past "m".
_WORDS = st.lists(
    st.text(alphabet="abcdefghijklm", min_size=5, max_size=10), min_size=2, max_size=8
)
_OTHER_WORDS = st.lists(
    st.text(alphabet="nopqrstuvwxyz", min_size=5, max_size=10), min_size=2, max_size=8
)


@given(_WORDS, st.sampled_from(["The user must never ", "Always ", "- Do not ", "* Only "]))
def test_a_rule_in_the_users_words_is_never_dropped(words: list[str], lead: str) -> None:
    said = " ".join(words)
    ledger = FactLedger((Fact("constraint", said, f"Never {said}.", by="user"),))
    text = f"# Guardrails\n{lead}{said}."
    assert unsupported_rules(text, ledger) == ()


@given(_WORDS, _OTHER_WORDS)
def test_a_rule_in_other_words_is_dropped(users: list[str], models: list[str]) -> None:
    said = " ".join(users)
    ledger = FactLedger((Fact("constraint", said, f"Never {said}.", by="user"),))
    rule = f"- The user must {' '.join(models)}."
    text = f"# Objective\n{said}\n\n# Guardrails\n{rule}"
    assert unsupported_rules(text, FactLedger()) == (rule,)
    assert unsupported_rules(text, ledger) == (rule,)
    assert rule not in drop_rules(text, (rule,))


def test_a_head_with_the_users_rule_keeps_it_in_a_fallback_free_digest() -> None:
    summary, _ = run(GOOD, head())
    assert summary.audit is not None
    assert summary.audit.invented_rules == ()
    assert "Never push to main." in body(summary)
