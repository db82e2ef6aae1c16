"""The condenser: gate → slice → summarize, tied into one transcript-in, transcript-out call.

The decision (gate and slice) and the finishing (fit check, shortening) are plain
functions; only the digest is written through the sync or async completer. When
there is nothing to do the condenser returns the *same list object* it was given.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Final

from window_budget.budget import (
    TokenLedger,
    estimate_message_tokens,
    estimate_tokens,
    resolve_counter,
)
from window_budget.contract import (
    BudgetPolicy,
    CondensePlan,
    CondenserDeps,
    CondenseResult,
    MemoryStore,
    SummarizeDeps,
    Summary,
)
from window_budget.memory import InProcessMemoryStore
from window_budget.messages import AgentMessage, AssistantMessage, DigestMessage, message_to_dict
from window_budget.pipeline._boundary import past_boundary
from window_budget.pipeline._decision import (
    CondenseDecision,
    check_room,
    decide_at,
    decide_forced,
    noop,
    slice_for,
)
from window_budget.pipeline._fit import fit_messages, fit_tail
from window_budget.pipeline._gate import (
    MIN_DIGEST_TOKENS,
    budget_limit,
    digest_budget,
)
from window_budget.pipeline._mask import is_masked, mask_target, mask_tool_outputs
from window_budget.pipeline._slice import plan_at
from window_budget.pipeline._trim import trim_result
from window_budget.pipeline.summarize import (
    record_budget,
    resolve_ledger,
    summarize,
    summarize_sync,
)
from window_budget.pipeline.summarize.facts import FactLedger

__all__ = ["DEFAULT_POLICY", "WindowCondenser", "condense", "condense_sync", "create_condenser"]

DEFAULT_POLICY = BudgetPolicy()
"""The same value as ``BudgetPolicy()`` (fire at 75 % of the window less 2,048 reserved, keep
~6,000 tokens verbatim), named for the CLI's option defaults and the demo; pass
``BudgetPolicy(...)`` to change any of it."""

LEDGERS: Final = 16
"""Conversations whose token ledger one condenser keeps (the least recently used goes)."""


async def condense(
    messages: Sequence[AgentMessage],
    deps: SummarizeDeps | None = None,
) -> Summary:
    """Summarize a slice directly with the session header (``scope="session"``)."""
    return await summarize(messages, replace(deps or SummarizeDeps(), scope="session"))


def condense_sync(
    messages: Sequence[AgentMessage],
    deps: SummarizeDeps | None = None,
) -> Summary:
    """The sync twin of :func:`condense`."""
    return summarize_sync(messages, replace(deps or SummarizeDeps(), scope="session"))


# ------------------------------------------------------------------ decision


class WindowCondenser:
    """A ready condenser: ``await condenser(messages)`` or ``condenser.sync(messages)``.

    Built by :func:`create_condenser`; keeps a :class:`TokenLedger` so re-checking a
    growing transcript costs only its new messages.
    """

    def __init__(self, deps: CondenserDeps) -> None:
        # "tiktoken", a plain function, ...: resolved once (a str would otherwise pass for a
        # counter, since str has a .count method).
        counter = resolve_counter(deps.counter)
        if counter is not deps.counter:
            deps = replace(deps, counter=counter)
        self.deps = deps
        """The dependencies it was built with (the counter resolved)."""
        # One ledger per conversation: a condenser shared by many (one middleware, many
        # threads) keeps each one's prefix sums instead of rebuilding them at every switch.
        self._ledgers: list[tuple[object, TokenLedger]] = []
        # One condenser may be shared by threads (a web server's workers); a ledger is not.
        self._lock = threading.RLock()

    @property
    def estimated(self) -> int:
        """Message estimates computed so far, all conversations together.

        For tests and benchmarks: a turn that costs what was appended adds that count.
        """
        with self._lock:
            return sum(ledger.estimated for _, ledger in self._ledgers)

    @property
    def memory(self) -> MemoryStore | None:
        """The memory store: the full ledger and every folded original (for ``recall``)."""
        return self.deps.memory

    def ledger(self, digest: AgentMessage, conversation: str | None = None) -> FactLedger | None:
        """The whole fact ledger ``digest`` stands for, read from :attr:`memory`."""
        return resolve_ledger(digest, self.deps.memory, conversation or self.deps.conversation)

    def _ledger_for(self, messages: Sequence[AgentMessage]) -> TokenLedger:
        """The ledger of the conversation ``messages`` belongs to (caller holds the lock).

        A conversation is recognised by its first message *object* (an adapter hands the
        same core objects for the same conversation turn after turn); the most recently
        used ledgers are kept, :data:`LEDGERS` of them. A wrong guess costs only time: a
        ledger re-checks what it is given and reprocesses from the first difference.
        """
        first = messages[0] if messages else None
        slots = self._ledgers
        at = next((i for i, (head, _) in enumerate(slots) if head is first), None)
        if at is not None:
            ledger = slots.pop(at)[1]
        elif len(slots) >= LEDGERS:
            ledger = slots.pop()[1]  # the least recently used
        else:
            ledger = TokenLedger(self.deps.counter)
        slots.insert(0, (first, ledger))
        return ledger

    def forget(self, first: object) -> None:
        """Drop the token ledger of the conversation whose first core message is ``first``."""
        with self._lock:
            self._ledgers = [slot for slot in self._ledgers if slot[0] is not first]

    @property
    def policy(self) -> BudgetPolicy:
        """The policy in force."""
        return self.deps.policy

    # -- the sans-I/O halves -------------------------------------------------

    def decide(
        self,
        messages: Sequence[AgentMessage],
        *,
        force: bool = False,
        pinned_tokens: int = 0,
        cut: int | None = None,
    ) -> CondenseDecision:
        """Run the gate and the slice; no model call.

        ``cut``: a caller's rule chose it (``decide_at``): the tail stays whole if it fits.
        """
        if (
            isinstance(pinned_tokens, bool)
            or not isinstance(pinned_tokens, int)
            or pinned_tokens < 0
        ):
            raise ValueError(f"pinned_tokens must be a non-negative int, got {pinned_tokens!r}")
        with self._lock:
            if cut is not None and self.deps.model is not None:
                return decide_at(
                    messages, cut, self.deps, self._ledger_for(messages), pinned_tokens
                )
            return self._decide(messages, force=force, pinned_tokens=pinned_tokens)

    def _decide(
        self, messages: Sequence[AgentMessage], *, force: bool, pinned_tokens: int
    ) -> CondenseDecision:
        deps, policy = self.deps, self.deps.policy
        model = deps.model
        ledger = self._ledger_for(messages)
        if force:
            return decide_forced(messages, deps, ledger, pinned_tokens)
        if model is None:
            return noop(messages, plan_at(messages, 0), 0, math.inf, "no-model")
        limit = budget_limit(model, policy, pinned_tokens)
        before = ledger.context(messages, model, pinned_tokens=pinned_tokens).context_tokens
        prefix = ledger.prefix(messages)
        if before <= limit:
            return noop(messages, plan_at(messages, 0), before, limit, "under-budget")
        room = int(limit) - pinned_tokens
        check_room(room, limit, pinned_tokens, model, policy)
        budget = min(
            digest_budget(model.context_window, policy.digest_max_tokens),
            max(MIN_DIGEST_TOKENS, room // 4),
        )
        token_budget = max(room - budget, 0)
        heuristic = prefix[-1] + pinned_tokens
        scale = heuristic / before if before > heuristic > 0 else 1.0
        # The provider counts more than the estimate does: shrink the tail in proportion
        # so the kept part really fits once the provider measures it.
        token_budget = int(token_budget * scale)
        if policy.strategy == "trim":
            trim_room = room
            if before > heuristic > 0:
                trim_room = int(room * heuristic / before)
            return CondenseDecision(
                None, plan_at(messages, 0), limit, before, pinned_tokens, trim_room, 0
            )
        plan = slice_for(messages, policy, prefix, ledger.blocked(messages), token_budget)
        if plan.cut > 0 and policy.mask_keep_outputs is not None:
            masked = self._mask(messages, plan, before, limit, pinned_tokens, scale, prefix)
            if masked is not None:
                return CondenseDecision(masked, masked.plan, limit, before, pinned_tokens, room, 0)
        if plan.cut == 0:
            # No legal cut (one tool group holds everything): shorten oversized messages.
            kept, shortened = fit_messages(list(messages), int(room * scale), deps.counter)
            if not shortened:
                return noop(messages, plan, before, limit, "nothing-condensable")
            after = estimate_tokens(kept, deps.counter) + pinned_tokens
            result = CondenseResult(kept, plan, None, before, after, limit, "shortened", shortened)
            return CondenseDecision(result, plan, limit, before, pinned_tokens, room, 0)
        return CondenseDecision(None, plan, limit, before, pinned_tokens, room, budget)

    def _mask(
        self,
        messages: Sequence[AgentMessage],
        plan: CondensePlan,
        before: int,
        limit: float,
        pinned: int,
        scale: float,
        prefix: Sequence[int],
    ) -> CondenseResult | None:
        """Masking alone, when it brings the transcript under the target; else None."""
        policy, counter = self.deps.policy, self.deps.counter
        assert policy.mask_keep_outputs is not None
        out, replaced = mask_tool_outputs(
            messages,
            end=plan.cut,
            keep_last=policy.mask_keep_outputs,
            min_chars=policy.mask_min_chars,
        )
        if not replaced:
            return None
        saved = sum(
            estimate_message_tokens(messages[i], counter) - estimate_message_tokens(out[i], counter)
            for i in replaced
        )
        # In the provider's units, as ``before`` is: ``scale`` is heuristic / provider (<= 1).
        after = math.ceil((prefix[-1] + pinned - saved) / scale)
        # Leave headroom: masking that only just fits would fire again on the next turn.
        if after > limit * mask_target(policy):
            return None
        # The usage the replies report measured the unmasked transcript.
        out = [
            replace(m, usage=None) if isinstance(m, AssistantMessage) and m.usage else m
            for m in out
        ]
        gone = set(replaced)
        masked_plan = CondensePlan(
            0,
            tuple(m for i, m in enumerate(messages) if i not in gone),
            tuple(messages[i] for i in replaced),
        )
        return CondenseResult(
            out, masked_plan, None, before, after, limit, "masked", masked=tuple(replaced)
        )

    def summarize_deps(
        self, decision: CondenseDecision, conversation: str | None = None
    ) -> SummarizeDeps:
        """The deps for the digest call of ``decision``."""
        deps = self.deps
        kept = sum(map(is_masked, decision.plan.kept))
        window = deps.model.context_window if deps.model is not None else None
        return SummarizeDeps(
            complete=deps.complete,
            complete_sync=deps.complete_sync,
            model=deps.summarizer_model or deps.model,
            scope="session",
            signal=deps.signal,
            max_tokens=decision.digest_budget,
            policy=deps.policy,
            counter=deps.counter,
            masked_total=sum(map(is_masked, decision.plan.dropped)) + kept,
            masked_kept=kept,
            memory=deps.memory,
            conversation=conversation or deps.conversation,
            record_tokens=record_budget(window),
            recall_offered=deps.memory is not None and deps.recall_offered,
        )

    def archive_masked(self, result: CondenseResult, conversation: str | None) -> None:
        """Masked originals go to the memory store, after what it holds (the ledger's order)."""
        store = self.deps.memory
        if store is not None and result.reason == "masked" and result.plan.dropped:
            name = conversation or self.deps.conversation
            store.archive(
                name, store.archived(name), [message_to_dict(m) for m in result.plan.dropped]
            )

    def archive_shortened(self, result: CondenseResult, conversation: str | None) -> None:
        """Originals of kept messages the result holds shortened go to the memory store.

        For a caller that stores the result in place of its transcript (``sync`` and
        ``await condenser(...)``): the cut words stay where ``recall`` reaches them.
        """
        store = self.deps.memory
        if store is None or not result.shortened:
            return
        if result.summary is None and result.reason != "shortened":
            return  # a trim: its own account of what it removed
        kept = result.plan.kept  # the output's last messages, one for one (a head may precede)
        start = len(result.messages) - len(kept)
        originals = [kept[i - start] for i in result.shortened if 0 <= i - start < len(kept)]
        name = conversation or self.deps.conversation
        store.archive(name, store.archived(name), [message_to_dict(m) for m in originals])

    def finish(
        self,
        messages: Sequence[AgentMessage],
        decision: CondenseDecision,
        summary: Summary | None,
        *,
        force: bool = False,
    ) -> CondenseResult:
        """Assemble ``[digest, *kept]`` and make it fit, shortening the tail if needed."""
        counter = self.deps.counter
        plan = decision.plan
        if summary is None:  # the trim strategy
            assert decision.room is not None
            return trim_result(
                messages,
                room=decision.room,
                pinned=decision.pinned,
                limit=decision.limit,
                tokens_before=decision.tokens_before,
                counter=counter,
            )
        kept = list(plan.kept)
        shortened: tuple[int, ...] = ()
        digest_tokens = estimate_message_tokens(summary.message, counter)
        if decision.room is not None:
            room, model = decision.room - digest_tokens, self.deps.model
            kept, shortened = fit_tail(kept, room, counter, model, self.policy, decision.pinned)
        if isinstance(summary.message, DigestMessage):
            # Record how many turns were kept: their usage figures measured the old transcript.
            summary = replace(summary, message=replace(summary.message, kept_count=len(kept)))
        out: list[AgentMessage] = [summary.message, *kept]
        after = estimate_tokens(out, counter) + decision.pinned
        return CondenseResult(
            out,
            plan,
            summary,
            decision.tokens_before,
            after,
            decision.limit,
            "forced" if force else "condensed",
            tuple(i + 1 for i in shortened),
        )

    # -- the drivers ----------------------------------------------------------

    async def run(
        self,
        messages: Sequence[AgentMessage],
        *,
        force: bool = False,
        pinned_tokens: int = 0,
        conversation: str | None = None,
        cut: int | None = None,
    ) -> CondenseResult:
        """Condense when over budget (or always, with ``force``); the full account.

        ``cut``: fold exactly the head before it (a caller's keep rule chose it; ``decide``).
        A provider's compaction block pins everything up to it (``pipeline._boundary``).

        Raises:
            BudgetError: the result cannot be made to fit; the message says what does not.
            CancelledByToken: the deps' signal fired; the input is untouched.

        """
        if past := past_boundary(messages, pinned_tokens, self.deps.counter, cut):
            return past.rebase(await self.run(past.tail, **past.options(force, conversation)))
        decision = self.decide(messages, force=force, pinned_tokens=pinned_tokens, cut=cut)
        if decision.result is not None:
            self.archive_masked(decision.result, conversation)
            return decision.result
        summary = None
        if self.policy.strategy == "summarize" or force:
            deps = self.summarize_deps(decision, conversation)
            summary = await summarize(decision.plan.dropped, deps)
        return self.finish(messages, decision, summary, force=force)

    def run_sync(
        self,
        messages: Sequence[AgentMessage],
        *,
        force: bool = False,
        pinned_tokens: int = 0,
        conversation: str | None = None,
        cut: int | None = None,
    ) -> CondenseResult:
        """The sync twin of :meth:`run`."""
        if past := past_boundary(messages, pinned_tokens, self.deps.counter, cut):
            return past.rebase(self.run_sync(past.tail, **past.options(force, conversation)))
        decision = self.decide(messages, force=force, pinned_tokens=pinned_tokens, cut=cut)
        if decision.result is not None:
            self.archive_masked(decision.result, conversation)
            return decision.result
        summary = None
        if self.policy.strategy == "summarize" or force:
            deps = self.summarize_deps(decision, conversation)
            summary = summarize_sync(decision.plan.dropped, deps)
        return self.finish(messages, decision, summary, force=force)

    async def __call__(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        """Transcript in, transcript out: the same list when nothing is to be done.

        The output is meant to replace the transcript: the original of a kept message it
        holds shortened goes to the memory store.
        """
        result = await self.run(messages)
        self.archive_shortened(result, None)
        return messages if result.messages is messages else list(result.messages)

    def sync(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        """The sync twin of ``await condenser(messages)``."""
        result = self.run_sync(messages)
        self.archive_shortened(result, None)
        return messages if result.messages is messages else list(result.messages)

    def __repr__(self) -> str:
        m = self.deps.model
        window = f"{m.id}@{m.context_window}" if m else "no model"
        return f"WindowCondenser({window}, {self.policy!r})"


def create_condenser(deps: CondenserDeps | None = None, /, **overrides: Any) -> WindowCondenser:
    """Build a condenser from optional deps; with none it is a network-free no-op.

    Keyword arguments override fields of ``deps`` (``create_condenser(model=m)``).

    >>> import asyncio
    >>> from window_budget import Model, UserMessage
    >>> condenser = create_condenser()
    >>> msgs = [UserMessage("hi")]
    >>> asyncio.run(condenser(msgs)) is msgs
    True
    """
    base = deps or CondenserDeps()
    if overrides:
        base = replace(base, **overrides)
    if base.memory is None and "memory" not in overrides:
        # The embedded default: ephemeral, this condenser's own. ``memory=None`` opts out
        # (the digest's bounded record then carries what the next compaction gets).
        base = replace(base, memory=InProcessMemoryStore())
    return WindowCondenser(base)
