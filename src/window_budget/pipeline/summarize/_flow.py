"""Summarize: one primitive for both scopes, written once and driven sync or async.

``_summary_flow`` is a generator that holds all the logic and no I/O: it yields each
request (context and options) for a model call and receives the reply (or the
exception) back. :func:`summarize` drives it with an async completer,
:func:`summarize_sync` with a sync one (the drivers live in ``_drive``; reading the
reply's text, in ``_reply``).

A head too long for one call is summarized in chunks, each chunk carrying the digest
of the ones before it in, so the summarizer's own window is never overrun.

Never raises for a missing model, a failing, stuck (``BudgetPolicy.summary_timeout``)
or junk-returning completer (an empty or non-text reply, an object of the wrong type,
a reply of more than a million characters): the network-free digest is produced and
the ``Summary`` says why. Cancellation is the exception: it raises
:class:`~window_budget.cancel.CancelledByToken`, promptly, even while a sync completer
is still blocked in its provider call.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Generator, Sequence
from dataclasses import replace
from typing import Any

from window_budget.budget import count_text
from window_budget.cancel import CancelledByToken
from window_budget.contract import (
    CompleteOptions,
    CondenseScope,
    Context,
    SummarizeDeps,
    Summary,
    TokenCounter,
)
from window_budget.digest import DIGEST_HEADERS, digest_body, is_digest
from window_budget.errors import SummarizerError
from window_budget.messages import (
    AgentMessage,
    DigestMessage,
    UserMessage,
)
from window_budget.pipeline._fit import water_level
from window_budget.pipeline.summarize._audit import audit_digest, audit_reply
from window_budget.pipeline.summarize._drive import SummaryRequest, drive_async, drive_sync
from window_budget.pipeline.summarize._local import local_ledger, render_local_digest
from window_budget.pipeline.summarize._memory import archive_start, carried_ledger, store_digest
from window_budget.pipeline.summarize._prompt import (
    CONDENSER_BRIEF,
    DIGEST_TEMPLATE,
    FRAMING_LINES,
    build_summary_prompt,
    clamp_text,
    cut_to_tokens,
    escape_block_tags,
    flatten_message,
)
from window_budget.pipeline.summarize._reply import SentPrompt, clean_reply, reply_text
from window_budget.pipeline.summarize._request import prefix_context, prefix_instruction
from window_budget.pipeline.summarize.facts import FactLedger, ledger_to_json, merge_ledgers

__all__ = [
    "SUMMARY_TAGS",
    "condense_scope",
    "condense_scope_sync",
    "make_digest_message",
    "summarize",
    "summarize_sync",
]

SUMMARY_TAGS = ("window-budget", "window-budget:summary")
"""Tags on every summary call, so frameworks can keep it out of streamed output."""

_PROMPT_OVERHEAD_TOKENS = 900  # brief + framing + template, rounded up


def make_digest_message(
    body: str,
    scope: CondenseScope = "session",
    *,
    covered_count: int = 0,
    fallback: bool = False,
    facts: FactLedger | None = None,
) -> DigestMessage:
    """The digest as the transcript carries it: a user message starting with the header.

    ``facts`` is the ledger it carries to the next compaction (serialized on the message).
    """
    return DigestMessage(
        f"{DIGEST_HEADERS[scope]}\n\n{body.strip()}",
        covered_count=covered_count,
        fallback=fallback,
        facts=None if facts is None else ledger_to_json(facts),
    )


_ERROR_CHARS = 500

logger = logging.getLogger("window_budget.pipeline.summarize")
"""Where a failing summarizer is reported: WARNING once per distinct failure, then DEBUG."""

_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()
_MAX_WARNED = 1024


def _log_fallback(kind: str, detail: str) -> None:
    """Report that the summarizer failed and the network-free digest stood in.

    A wrong API key fails on every compaction: the first failure of each kind is a
    WARNING, repeats are DEBUG, so the log says it once without going quiet for good.
    """
    with _WARNED_LOCK:
        first = kind not in _WARNED
        if first and len(_WARNED) < _MAX_WARNED:
            _WARNED.add(kind)
    logger.log(
        logging.WARNING if first else logging.DEBUG,
        "window-budget: the summarizer failed (%s); the network-free digest was used "
        'instead (BudgetPolicy(on_summarizer_error="raise") raises instead)%s',
        detail,
        "" if first else " [repeat]",
    )


def _describe(exc: BaseException) -> str:
    """``Type: message`` of a completer's exception, bounded and never raising itself.

    Provider errors can quote the whole prompt back, and a hostile ``__str__`` can raise.
    """
    try:
        text = " ".join(str(exc)[: _ERROR_CHARS + 1].split())
    except Exception:
        text = "<its message could not be read>"
    if len(text) > _ERROR_CHARS:
        text = text[: _ERROR_CHARS - 1] + "…"
    return f"{type(exc).__name__}: {text}"


def _fit_calls(entries: list[str], allowed: int) -> list[str]:
    """Shrink ``entries`` to about ``allowed`` characters: clamp the longest first.

    Water-filling: find the largest per-entry cap under which everything fits, so short
    entries (asks, decisions) stay whole and long outputs give way. When even a small cap
    is too much, the oldest middle entries are left out with a marker (the first ask stays).
    """
    if sum(len(e) + 1 for e in entries) <= allowed:
        return entries
    # Each clamped entry carries a marker of about 31 characters.
    cap = max(200, water_level([len(e) for e in entries], allowed - 31 * len(entries)))
    clamped = [clamp_text(e, cap) for e in entries]
    if sum(len(e) + 1 for e in clamped) <= allowed:
        return clamped
    kept: list[str] = []
    size = len(clamped[0]) + 80
    for entry in reversed(clamped[1:]):
        if size + len(entry) + 1 > allowed:
            break
        kept.append(entry)
        size += len(entry) + 1
    omitted = len(clamped) - 1 - len(kept)
    return [
        clamped[0],
        f"» note: [… {omitted} older entries omitted to bound the summary …]",
        *reversed(kept),
    ]


def _chunks(entries: list[str], budget_chars: int) -> list[str]:
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for entry in entries:
        entry = clamp_text(entry, budget_chars)
        if current and size + len(entry) + 1 > budget_chars:
            chunks.append("\n".join(current))
            current, size = [], 0
        current.append(entry)
        size += len(entry) + 1
    if current:
        chunks.append("\n".join(current))
    return chunks


def _carry_digests(
    body_messages: list[AgentMessage], prior: str | None, deps: SummarizeDeps
) -> tuple[str | None, FactLedger | None, int]:
    """Take the digests at the head of ``body_messages`` off it and carry them in.

    A digest at the head of the dropped part is carried in, not flattened again; its ledger
    (or, for a digest without one, what its text states) is merged. Returns the carried
    text (after ``prior``), the merged ledger, and the masked outputs the last one counted.
    """
    prior_ledger: FactLedger | None = None
    counted_masks = 0
    while body_messages and is_digest(body_messages[0]):
        head = body_messages.pop(0)
        text = digest_body(head) or ""
        prior = f"{prior.strip()}\n\n{text}" if prior and prior.strip() else text
        carried = carried_ledger(head, deps)
        if carried is not None:
            counted_masks = carried.masked_kept
            prior_ledger = carried if prior_ledger is None else merge_ledgers(prior_ledger, carried)
    return prior, prior_ledger, counted_masks


def _carried_text(
    prior: str | None,
    prior_ledger: FactLedger | None,
    max_tokens: int,
    counter: TokenCounter | None,
) -> str | None:
    """The carried digest as the first call shows it: audited against its ledger, within budget."""
    digest = prior
    if prior and prior.strip() and prior_ledger is not None:
        # The model gets the carried ledger too: what the last digest's text lost is pinned.
        digest, _ = audit_digest(
            prior.strip(), prior_ledger, max_tokens=max_tokens, counter=counter
        )
    if digest and count_text(digest, counter) > max_tokens:
        # Written under a larger budget: it would crowd out the scrollback. Its facts are
        # already in the ledger, which the fallback and the audit draw on.
        digest = cut_to_tokens(digest, max_tokens, counter)
    return digest


def _plan_calls(entries: list[str], budget_chars: int, max_calls: int) -> list[str]:
    """The scrollback of each call: at most ``max_calls`` chunks of ``budget_chars`` each."""
    chunks = _chunks(entries, budget_chars) or [""]
    allowed = budget_chars * max_calls
    while len(chunks) > max_calls:
        # Greedy packing leaves gaps at chunk ends: tighten until the calls fit the cap.
        allowed = int(allowed * 0.9)
        chunks = _chunks(_fit_calls(entries, allowed), budget_chars) or [""]
    return chunks


def _chunks_for(
    entries: list[str], deps: SummarizeDeps, max_tokens: int, prefix: Context | None
) -> list[str]:
    """The scrollback each call shows: one for a prefix-shaped call, else the planned chunks."""
    if prefix is not None:
        return ["\n".join(entries)]  # what the reply checks compare with, not what is sent
    assert deps.model is not None
    # Each call must fit the summarizer's own window: prompt + carried digest (at most
    # ``max_tokens``, this one or the one the previous call wrote) + reply.
    room = deps.model.context_window - 2 * max_tokens - _PROMPT_OVERHEAD_TOKENS
    return _plan_calls(entries, max(4000, int(room * 3.0)), deps.policy.max_summary_calls)


def _call_for(
    chunk: str, digest: str | None, prefix: Context | None, deps: SummarizeDeps, carried: str
) -> tuple[Context, SentPrompt]:
    """One call's context and what the reply checks compare the reply with."""
    if prefix is None:
        prompt = build_summary_prompt(chunk, scope=deps.scope, prior_digest=digest)
        instructions = "\n".join((CONDENSER_BRIEF, FRAMING_LINES[deps.scope], DIGEST_TEMPLATE))
        return Context(CONDENSER_BRIEF, (UserMessage(prompt),)), SentPrompt(
            instructions, chunk, carried
        )
    # The carried digest is quoted in the instruction, but a line copied from it is a copy
    # (allowed beside the model's own lines), not an echo of the instruction.
    own_words = f"{prefix_instruction(deps.scope, None)}\n{deps.system_prompt}"
    return prefix, SentPrompt(own_words, chunk, carried)


def _ledgers(
    messages: Sequence[AgentMessage], deps: SummarizeDeps
) -> tuple[list[AgentMessage], str | None, FactLedger | None, FactLedger]:
    """The fold without its carried digests, their text and ledger, and the fold's ledger."""
    body_messages = list(messages)
    prior, prior_ledger, counted_masks = _carry_digests(body_messages, deps.prior_digest, deps)
    # Originals of outputs masked since the carried digest went to the archive when they were
    # masked, ahead of what is folded now: the pointers start after them.
    handed_back = max(0, deps.masked_total - counted_masks)
    if handed_back:
        base = prior_ledger or FactLedger()
        prior_ledger = replace(base, archived=base.archived + handed_back)
    prior_ledger = archive_start(deps, prior_ledger)
    ledger = local_ledger(body_messages, prior_facts=prior_ledger, prior_digest=deps.prior_digest)
    return body_messages, prior, prior_ledger, replace(ledger, masked_kept=deps.masked_kept)


def _call_failure(exc: Exception, on_error: str) -> str:
    """What a failed summary call says, logged; raised instead when ``on_error`` is "raise"."""
    failure = _describe(exc)
    if on_error == "raise":
        raise SummarizerError(
            f"the summarizer failed ({failure}); the transcript was left unchanged"
        ) from exc
    _log_fallback(type(exc).__name__, failure)
    return failure


def _unusable(why: str, on_error: str) -> str:
    """``why`` a reply was unusable, logged; raised instead when ``on_error`` is "raise"."""
    if on_error == "raise":
        raise SummarizerError(
            f"the summarizer's reply was unusable ({why}); the transcript was left unchanged"
        )
    _log_fallback("unusable reply: " + re.sub(r"[\d,]+", "N", why), f"unusable reply: {why}")
    return why


def _summary_flow(
    messages: Sequence[AgentMessage],
    deps: SummarizeDeps,
) -> Generator[SummaryRequest, Any, Summary]:
    """All the logic of summarize; yields requests, receives replies or exceptions."""
    scope = deps.scope
    policy = deps.policy
    # The condenser hands the window-scaled budget over as max_tokens; a direct call gets 2,000.
    max_tokens = deps.max_tokens or policy.digest_max_tokens or 2000
    # The whole digest message stays within max_tokens: header, blank line and framing too.
    body_tokens = max(16, max_tokens - count_text(DIGEST_HEADERS[scope] + "\n\n", deps.counter) - 6)
    body_messages, prior, prior_ledger, ledger = _ledgers(messages, deps)
    covered = len(messages)

    def fallback(reason: str) -> Summary:
        body = render_local_digest(
            ledger,
            len(body_messages),
            reason=reason,
            max_tokens=body_tokens,
            counter=deps.counter,
            messages=body_messages,
            recall=deps.recall_offered,
        )
        body = cut_to_tokens(body, body_tokens, deps.counter)
        message = make_digest_message(body, scope, covered_count=covered, fallback=True)
        message = store_digest(
            message, ledger, body_messages, deps, record_tokens=deps.record_tokens
        )
        return Summary(message, covered, True, reason, scope)

    if deps.signal is not None:
        deps.signal.raise_if_cancelled()
    model = deps.model
    if model is None or (deps.complete is None and deps.complete_sync is None):
        return fallback("no model bound")

    chars = policy.tool_output_chars
    entries = [e for m in body_messages for e in flatten_message(m, tool_output_chars=chars)]
    digest = _carried_text(prior, prior_ledger, max_tokens, deps.counter)
    carried = digest.strip() if digest else ""
    prefix = prefix_context(messages, deps, carried=carried, max_tokens=max_tokens)
    chunks = _chunks_for(entries, deps, max_tokens, prefix)
    options = CompleteOptions(
        max_tokens=max_tokens, reasoning="high", signal=deps.signal, tags=SUMMARY_TAGS
    )

    def unusable(why: str) -> Summary:
        return fallback(_unusable(why, policy.on_summarizer_error))

    for chunk in chunks:
        context, sent = _call_for(chunk, digest, prefix, deps, carried)
        try:
            reply = yield SummaryRequest(model, context, options)
        except CancelledByToken:
            raise
        except Exception as exc:
            return fallback(f"model call failed: {_call_failure(exc, policy.on_summarizer_error)}")
        text, why = reply_text(reply, max_tokens)
        if text is not None:
            text, why = _cleaned(text, sent)
        if text is None:
            return unusable(why)
        digest = text
    assert digest is not None
    body, audit = audit_reply(digest, ledger, entries, carried, body_tokens, deps.counter)
    if audit.checked and not audit.found + audit.copied:
        # Nothing the audit looks for, in the model's words or copied: the 0.5B shape of a
        # digest that restates the template, kept as the objective with every fact pinned.
        return unusable(
            f"reply held none of the {audit.checked} key facts of the folded turns "
            "(objective, constraints, files, errors, asks)"
        )
    body = _without_tags(body, body_tokens, deps.counter)
    message = make_digest_message(body, scope, covered_count=covered)
    message = store_digest(message, ledger, body_messages, deps, record_tokens=deps.record_tokens)
    return Summary(message, covered, False, None, scope, audit)


def _cleaned(text: str, sent: SentPrompt) -> tuple[str | None, str]:
    """The reply cleaned of what it wrapped, echoed or copied, or None and why it failed."""
    cleaned = clean_reply(text, sent)
    if cleaned.text is not None and cleaned.removed:
        logger.debug(
            "window-budget: the summarizer's reply was cleaned (removed: %s)",
            ", ".join(cleaned.removed),
        )
    return cleaned.text, cleaned.why


def _without_tags(body: str, max_tokens: int, counter: TokenCounter | None) -> str:
    """``body`` with the prompt's tags escaped, also a look-alike or one in a pinned fact.

    A digest is carried into the next prompt, and a tag in it would read as the block's end.
    """
    escaped = escape_block_tags(body)
    return body if escaped == body else cut_to_tokens(escaped, max_tokens, counter)


async def summarize(
    messages: Sequence[AgentMessage],
    deps: SummarizeDeps | None = None,
) -> Summary:
    """Fold ``messages`` into one digest (async).

    Args:
        messages: the head to condense; a digest at its start is carried in.
        deps: completer, model, scope, carried digest, cancellation, output cap.

    Returns:
        A ``Summary``; ``fallback`` is True when the network-free digest was used.

    Raises:
        CancelledByToken: ``deps.signal`` was cancelled.
        SummarizerError: the model failed and the policy says ``on_summarizer_error="raise"``.

    >>> import asyncio
    >>> s = asyncio.run(summarize([UserMessage("rename the config loader")]))
    >>> s.text.splitlines()[0], s.fallback
    ('[session digest — older turns condensed]', True)

    """
    deps = deps or SummarizeDeps()
    return await drive_async(_summary_flow(messages, deps), deps)


def summarize_sync(
    messages: Sequence[AgentMessage],
    deps: SummarizeDeps | None = None,
) -> Summary:
    """The sync twin of :func:`summarize` (uses ``deps.complete_sync`` when given)."""
    deps = deps or SummarizeDeps()
    return drive_sync(_summary_flow(messages, deps), deps)


async def condense_scope(
    messages: Sequence[AgentMessage],
    deps: SummarizeDeps | None = None,
) -> Summary:
    """Archive an abandoned branch: :func:`summarize` with ``scope="branch"``."""
    return await summarize(messages, replace(deps or SummarizeDeps(), scope="branch"))


def condense_scope_sync(
    messages: Sequence[AgentMessage],
    deps: SummarizeDeps | None = None,
) -> Summary:
    """The sync twin of :func:`condense_scope`."""
    return summarize_sync(messages, replace(deps or SummarizeDeps(), scope="branch"))
