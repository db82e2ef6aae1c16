"""The network-free digest: the fact ledger rendered under the six headings.

Used whenever no model is bound, the model call fails, or it replies with nothing.
The facts come from :mod:`window_budget.pipeline.summarize.facts`.
"""

from __future__ import annotations

from collections.abc import Sequence

from window_budget.contract import TokenCounter
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    ToolCallBlock,
    ToolResultMessage,
)
from window_budget.pipeline.summarize._prompt import clamp_text
from window_budget.pipeline.summarize.facts import (
    FactLedger,
    extract_facts,
    ledger_from_text,
    merge_ledgers,
    render_ledger,
)
from window_budget.pipeline.summarize.facts.text import one_line

__all__ = [
    "build_local_digest",
    "local_ledger",
    "render_local_digest",
]


def build_local_digest(
    messages: Sequence[AgentMessage],
    *,
    prior_digest: str | None = None,
    reason: str = "no model bound",
    max_tokens: int = 2000,
    counter: TokenCounter | None = None,
    prior_facts: FactLedger | None = None,
) -> str:
    r"""Fill the digest template from ``messages`` without a model; returns the body text.

    The body is the rendered fact ledger (:mod:`window_budget.pipeline.summarize.facts`). The
    header
    is not included (the caller stamps it). ``prior_facts`` (a carried ledger),
    ``prior_digest`` (a carried digest's text) and any digest found among ``messages``
    are merged fact by fact, so digests never nest and a chain of compactions stays within
    ``max_tokens``. The result never exceeds ``max_tokens`` as measured by ``counter``
    (or the heuristic).

    >>> from window_budget.messages import UserMessage
    >>> body = build_local_digest([UserMessage("Port it to TOML. Never touch migrations/.")])
    >>> "# Guardrails\n- Never touch migrations/." in body
    True
    """
    ledger = local_ledger(messages, prior_digest=prior_digest, prior_facts=prior_facts)
    return render_local_digest(
        ledger,
        len(messages),
        reason=reason,
        max_tokens=max_tokens,
        counter=counter,
        messages=messages,
    )


def local_ledger(
    messages: Sequence[AgentMessage],
    *,
    prior_digest: str | None = None,
    prior_facts: FactLedger | None = None,
) -> FactLedger:
    """The ledger of ``messages`` merged into the carried one (ledger, else digest text)."""
    prior = prior_facts
    if prior_digest and prior_digest.strip():
        from_text = ledger_from_text(prior_digest)
        prior = from_text if prior is None else merge_ledgers(prior, from_text)
    return extract_facts(messages, prior=prior)


def render_local_digest(
    ledger: FactLedger,
    condensed: int,
    *,
    reason: str,
    max_tokens: int,
    counter: TokenCounter | None,
    messages: Sequence[AgentMessage] = (),
    recall: bool = False,
) -> str:
    """The network-free digest body for ``ledger``: a note line, then the six headings.

    ``recall``: a memory store keeps what is left out, so the last line points there.
    """
    calls = [
        b
        for m in messages
        if isinstance(m, AssistantMessage) and not isinstance(m.content, str)
        for b in m.content
        if isinstance(b, ToolCallBlock)
    ]
    failed_n = sum(1 for m in messages if isinstance(m, ToolResultMessage) and m.is_error)
    failed = f", {failed_n} failed" if failed_n else ""
    note = (
        f"_Network-free digest ({clamp_text(one_line(reason), 100)}): "
        f"{condensed} messages condensed, {len(calls)} tool calls{failed}._"
    )
    return render_ledger(ledger, max_tokens=max_tokens, counter=counter, note=note, recall=recall)
