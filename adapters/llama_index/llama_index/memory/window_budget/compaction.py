"""One compaction attempt of a LlamaIndex memory: run the core, commit the digest, view.

The memory's snapshot is converted through the bridge's cache and handed to the core's
condenser with what the view sets aside (pinned messages, the caller's prefix, what a
view adds). A new digest is committed by a conditional rewrite of the stored
conversation (re-read, check, archive, write; run again from a fresh read when another
writer got there first); a failing LLM leaves the store as it was. The view is planned
from the same pass (:mod:`~llama_index.memory.window_budget.views`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llama_index.core.base.llms.types import ChatMessage

from llama_index.memory.window_budget.conversation import StoredConversation
from llama_index.memory.window_budget.convert import (
    digest_covered,
    from_core_shortened,
    is_digest,
    make_digest_chat_message,
    seal_key,
    split_pinned,
    to_core,
)
from llama_index.memory.window_budget.instrumentation import (
    Compaction,
    CompactionEvent,
    dispatcher,
)
from llama_index.memory.window_budget.views import Pass, ViewPlanner
from window_budget import bridge
from window_budget.budget import estimate_message_tokens
from window_budget.contract import CondenseResult, TokenCounter
from window_budget.errors import BudgetError, SummarizerError, provider_error
from window_budget.messages import AgentMessage
from window_budget.pipeline import AheadCompactor, WindowCondenser, provider_boundary
from window_budget.pipeline.summarize import ledger_of
from window_budget.stores import Fold

__all__ = ["Compactor", "Outcome"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one compaction attempt leaves the memory."""

    view: list[ChatMessage]
    """The view (empty when none was asked for)."""
    result: CondenseResult | None
    """The core's account of the pass."""
    compaction: Compaction | None
    """The account of a digest written or outputs masked; None when neither happened."""


@dataclass(frozen=True, slots=True)
class Compactor:
    """One memory's compaction, as its settings and stores stand (one per call)."""

    sync_condenser: WindowCondenser
    """The condenser of the sync path."""
    async_condenser: WindowCondenser
    """The condenser of the async path (its own token ledger)."""
    ahead: AheadCompactor | None
    """The async condenser's driver writing the next digest in the background, or None."""
    counter: TokenCounter | None
    """The memory's counter (None: the heuristic)."""
    has_llm: bool
    """True when an LLM writes the digests (a fallback digest is then not committed)."""
    core: Callable[[Sequence[ChatMessage]], list[AgentMessage]]
    """Converts messages through the bridge's cache."""
    planner: ViewPlanner
    """Plans the views."""
    conversation: StoredConversation
    """The stored conversation."""

    def begin(self, snapshot: list[ChatMessage]) -> tuple[int, list[AgentMessage]]:
        """The pinned count and the whole snapshot converted, in one pass over the cache.

        Converting the snapshot as a whole (not its pinned part and body separately) lets
        the cache purge only what left the store, so the body's cores stay the same objects
        from call to call and the condenser's ledger estimates only what was appended.
        """
        n, cores = split_pinned(snapshot), self.core(snapshot)
        # A provider's compaction pins everything up to it (``window_budget.pipeline``).
        bound = provider_boundary(cores[n:])
        return (n if bound is None else n + bound[1]), cores

    def run_sync(self, snapshot: list[ChatMessage], extra: int, force: bool) -> Pass:
        """Run the core on ``snapshot`` beside a prefix of ``extra`` tokens, else without it."""
        n, cores = self.begin(snapshot)
        body = cores[n:]
        assert self.sync_condenser is not None
        for pinned_extra in dict.fromkeys((extra, 0)):
            pinned = self.planner.pinned_tokens(snapshot, cores, n, pinned_extra)
            if self.plan_squeezed(
                self.sync_condenser, snapshot, cores, n, pinned_extra, force, pinned
            ):
                continue  # no summary call for a view that will not show it
            try:
                result = self.sync_condenser.run_sync(body, force=force, pinned_tokens=pinned)
            except BudgetError as exc:
                logger.debug("window-budget: %s", exc)
                continue
            except SummarizerError as exc:  # ``on_summarizer_error="raise"``: as the provider's
                raise provider_error(exc) from exc.__cause__
            return Pass(snapshot, cores, n, result, extra, pinned_extra == extra)
        return Pass(snapshot, cores, n, None, extra, False)

    async def run_async(self, snapshot: list[ChatMessage], extra: int, force: bool) -> Pass:
        """Async :meth:`run_sync` (summaries through ``await llm.achat``)."""
        n, cores = self.begin(snapshot)
        body = cores[n:]
        assert self.async_condenser is not None
        for pinned_extra in dict.fromkeys((extra, 0)):
            pinned = self.planner.pinned_tokens(snapshot, cores, n, pinned_extra)
            if self.plan_squeezed(
                self.async_condenser, snapshot, cores, n, pinned_extra, force, pinned
            ):
                continue  # no summary call for a view that will not show it
            try:
                if self.ahead is not None:  # a ready background digest, else as below
                    result = await self.ahead.run(body, force=force, pinned_tokens=pinned)
                else:
                    result = await self.async_condenser.run(body, force=force, pinned_tokens=pinned)
            except BudgetError as exc:
                logger.debug("window-budget: %s", exc)
                continue
            except SummarizerError as exc:  # ``on_summarizer_error="raise"``: as the provider's
                raise provider_error(exc) from exc.__cause__
            return Pass(snapshot, cores, n, result, extra, pinned_extra == extra)
        return Pass(snapshot, cores, n, None, extra, False)

    def plan_squeezed(
        self,
        condenser: WindowCondenser,
        snapshot: list[ChatMessage],
        cores: list[AgentMessage],
        n: int,
        extra: int,
        force: bool,
        pinned_tokens: int,
    ) -> bool:
        """True when the plan beside a prefix of ``extra`` tokens has no space for a digest.

        Decided before any summary call (the condenser's sans-I/O ``decide``): the cut
        falls after the newest user message and the kept tail is shorter than the largest
        verbatim suffix that fits. The view is then that suffix, and the store is
        compacted as for the window alone (the pass without the prefix).
        """
        if not extra:
            return False
        try:
            decision = condenser.decide(cores[n:], force=force, pinned_tokens=pinned_tokens)
        except BudgetError:
            return False  # the run raises the same and the caller moves on
        if decision.result is not None or decision.plan.cut == 0:
            return False
        plan = self.planner.plan(Pass(snapshot, cores, n, None, extra))
        return plan.squeezed_by(decision.plan.cut)

    def digest_for(self, p: Pass) -> ChatMessage | None:
        """The digest message ``p`` wrote, carrying the counts of the digests it folds."""
        result = p.result
        if result is None or result.summary is None or result.plan.cut == 0:
            return None
        body = p.body
        cut = result.plan.cut
        covered, compactions = bridge.head_counts(
            bridge.read_digest_record(m.additional_kwargs, key=seal_key()) for m in body[:cut]
        )
        return make_digest_chat_message(
            result.summary.text, covered, source=result.summary.message, compactions=compactions
        )

    def should_commit(self, p: Pass) -> bool:
        """True when ``p`` wrote a digest worth storing (not a failed call's fallback)."""
        result = p.result
        if result is None or result.summary is None or result.plan.cut == 0:
            return False
        # A call that failed (an outage, a rate limit, a timeout): keep the store as it was and
        # retry on a later call; the view still uses the network-free digest meanwhile. A reply
        # that was rejected (an echo of the prompt, no fact of the session) would be rejected
        # again: the network-free digest is stored, not paid for again on every get().
        reason = result.summary.fallback_reason or ""
        return not (
            result.summary.fallback and self.has_llm and reason.startswith("model call failed")
        )

    def commit(self, p: Pass, digest: ChatMessage) -> bool:
        """Rewrite the store as ``[pinned, digest, tail, anything appended meanwhile]``.

        A conditional rewrite (``window_budget.stores``): re-read, check the store still
        starts with the snapshot, archive the folded messages and write, as one step
        against other writers. Returns False (and writes nothing) when the store changed
        under the snapshot.
        """
        assert p.result is not None
        cut = p.result.plan.cut
        body = p.body
        fold = Fold(
            expected=tuple(p.snapshot),
            replacement=(*p.snapshot[: p.pinned], digest, *body[cut:]),
            archived=tuple(m for m in body[:cut] if not is_digest(m)),
        )
        return self.conversation.commit(fold)

    def commit_masked(self, p: Pass) -> bool:
        """Archive the masked outputs' originals and store copies carrying the placeholders.

        The same conditional rewrite as :meth:`commit`: returns False (and writes nothing)
        when the store changed under the snapshot.
        """
        result, snapshot, body = p.result, p.snapshot, p.body
        assert result is not None
        mapped = bridge.map_result(body, p.cores[p.pinned :], result, copy=from_core_shortened)
        new_body = list(body)
        for slot, copy in zip(mapped.slots, mapped.tail, strict=True):
            if slot.kind == "masked":  # shortened entries are the view's; the store keeps all
                new_body[slot.source] = copy
        fold = Fold(
            expected=tuple(snapshot),
            replacement=(*snapshot[: p.pinned], *new_body),
            archived=tuple(mapped.dropped),
        )
        return self.conversation.commit(fold)

    def record(self, p: Pass, digest: ChatMessage | None, committed: bool) -> Compaction | None:
        """The account of a compaction that wrote a digest or masked outputs (and its event)."""
        result = p.result
        if digest is None and result is not None and result.masked:
            return Compaction(
                covered=0,
                folded=0,
                kept=len(p.body),
                digest_tokens=0,
                fallback=False,
                fallback_reason=None,
                audit=None,
                ledger_facts=None,
                committed=committed,
                masked=len(result.masked),
                tokens_freed=result.tokens_freed,
            )
        if digest is None or result is None or result.summary is None:
            return None
        core = to_core(digest)
        ledger = ledger_of(core)
        compaction = Compaction(
            covered=digest_covered(digest),
            folded=result.plan.cut,
            kept=len(p.body) - result.plan.cut,
            digest_tokens=estimate_message_tokens(core, self.counter),
            fallback=result.summary.fallback,
            fallback_reason=result.summary.fallback_reason,
            audit=result.audit,
            ledger_facts=None if ledger is None else len(ledger.facts),
            committed=committed,
        )
        dispatcher.event(
            CompactionEvent(chat_store_key=self.conversation.key, compaction=compaction.as_dict())
        )
        return compaction

    def _outcome(
        self, p: Pass, digest: ChatMessage | None, committed: bool, want_view: bool
    ) -> Outcome:
        return Outcome(
            self.planner.view(p, digest) if want_view else [],
            p.result,
            self.record(p, digest, committed),
        )

    def compact_sync(self, extra: int, *, force: bool, want_view: bool) -> Outcome:
        """Read, compact if the gate fires, commit the digest, and build the view."""
        p = self.run_sync(self.conversation.read(), extra, force)
        digest = self.digest_for(p)
        if self.planner.squeezed_by_prefix(p, digest):
            p = dataclasses.replace(
                self.run_sync(p.snapshot, 0, force), extra=extra, prefix_fits=False
            )
            digest = self.digest_for(p)
        committed = False
        for _ in range(3):
            if digest is None or not self.should_commit(p):
                break
            if self.commit(p, digest):
                committed = True
                break
            p = self.run_sync(self.conversation.read(), extra, force)
            digest = self.digest_for(p)
        if digest is None and p.result is not None and p.result.masked:
            committed = self.commit_masked(p)
        return self._outcome(p, digest, committed, want_view)

    async def compact_async(self, extra: int, *, force: bool, want_view: bool) -> Outcome:
        """Async :meth:`compact_sync`: the store's async reads, writes off the event loop."""
        p = await self.run_async(await self.conversation.aread(), extra, force)
        digest = self.digest_for(p)
        if self.planner.squeezed_by_prefix(p, digest):
            p = dataclasses.replace(
                await self.run_async(p.snapshot, 0, force), extra=extra, prefix_fits=False
            )
            digest = self.digest_for(p)
        committed = False
        for _ in range(3):
            if digest is None or not self.should_commit(p):
                break
            if await self.conversation.write_in_thread(self.commit, p, digest):
                committed = True
                break
            p = await self.run_async(await self.conversation.aread(), extra, force)
            digest = self.digest_for(p)
        if digest is None and p.result is not None and p.result.masked:
            committed = await self.conversation.write_in_thread(self.commit_masked, p)
        return self._outcome(p, digest, committed, want_view)
