"""Ahead-of-time compaction: the next digest is written in the background, before it is needed.

When the prompt crosses ``BudgetPolicy.precompact_ratio`` (below the trigger), the head that
the gate would fold there starts being summarized in an asyncio task; the turn that crosses
the trigger then folds exactly that head with the ready digest instead of waiting for a model
call. The digest is used only when it is the one for the head folded: the task finished with
a model-written digest, the head's content hash still matches the transcript, cutting there
keeps tool pairs whole and the result lands under the limit. Otherwise (not ready, failed,
cancelled, timed out, stale) the turn takes the synchronous path, as without this object.

At most one task per conversation (and :data:`MAX_JOBS` in all). What a background digest
writes to the memory store is held back and written only when the digest is used, so a
discarded digest leaves no trace in the archive or the ledger versions.

Adapters call :meth:`AheadCompactor.run` where they called ``WindowCondenser.run``, from an
async hook (LangChain ``abefore_model``, LlamaIndex ``aget``/``aput``). A background digest
runs outside the turn's context (it outlives the turn: a tracer sees it as its own root run),
and belongs to the event loop that started it: a later turn on another loop (``asyncio.run``
per request) does not use it and starts afresh.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from window_budget.budget import estimate_tokens
from window_budget.contract import (
    CondenseResult,
    LedgerVersion,
    MemoryStore,
    SummarizeDeps,
    Summary,
)
from window_budget.errors import BudgetError
from window_budget.messages import AgentMessage, message_to_dict
from window_budget.pipeline._boundary import past_boundary
from window_budget.pipeline._condenser import WindowCondenser
from window_budget.pipeline._decision import CondenseDecision
from window_budget.pipeline._gate import MIN_DIGEST_TOKENS, budget_limit, digest_budget
from window_budget.pipeline._slice import blocked_cuts, plan_at
from window_budget.pipeline.summarize import summarize

__all__ = ["MAX_JOBS", "AheadCompactor", "AheadState", "head_hash"]

MAX_JOBS: Final = 64
"""Background digests one compactor keeps at once; starting one more cancels the oldest."""

LAND_SHARE: Final = 0.8
"""A ready digest is used only when the result lands under this share of the limit: a
smaller head than the gate would fold now must not leave a transcript that fires again."""

AheadState = Literal["none", "running", "ready", "failed", "cancelled"]
"""Where a conversation's background digest stands."""


def head_hash(messages: Sequence[AgentMessage]) -> str:
    """A content hash of ``messages`` (new objects with the same content hash the same)."""
    digest = hashlib.sha256()
    for message in messages:
        row = json.dumps(message_to_dict(message), sort_keys=True, default=repr)
        digest.update(row.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


class _HeldStore:
    """A memory store whose writes wait until :meth:`commit` (reads go to the real one).

    ``save_ledger`` answers the version the real store will give, so the digest's pointer is
    right once committed; :meth:`commit` refuses when the store moved on meanwhile.
    """

    def __init__(self, store: MemoryStore, conversation: str) -> None:
        self._store = store
        self._conversation = conversation
        newest = store.ledger(conversation)
        self._version = newest.version if newest is not None else 0
        self._archived = store.archived(conversation)
        self._archives: list[tuple[str, int, list[Mapping[str, Any]]]] = []
        self._ledgers: list[tuple[str, Mapping[str, Any], str]] = []

    @property
    def key(self) -> bytes:
        return self._store.key

    def archive(
        self, conversation: str, start: int, originals: Sequence[Mapping[str, Any]]
    ) -> None:
        self._archives.append((conversation, start, list(originals)))

    def archived(self, conversation: str) -> int:
        return self._store.archived(conversation)

    def original(self, conversation: str, position: int) -> Mapping[str, Any] | None:
        return self._store.original(conversation, position)

    def originals(self, conversation: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
        return self._store.originals(conversation)

    def save_ledger(self, conversation: str, ledger: Mapping[str, Any], *, seal: str) -> int:
        self._ledgers.append((conversation, ledger, seal))
        return self._version + len(self._ledgers)

    def ledger(self, conversation: str, version: int | None = None) -> LedgerVersion | None:
        return self._store.ledger(conversation, version)

    def commit(self) -> bool:
        """Write what was held; False (nothing written) when the store changed since."""
        store, name = self._store, self._conversation
        newest = store.ledger(name)
        if (newest.version if newest else 0) != self._version or (
            store.archived(name) != self._archived
        ):
            return False
        for conversation, start, originals in self._archives:
            store.archive(conversation, start, originals)
        expected = self._version
        for conversation, ledger, seal in self._ledgers:
            expected += 1
            if store.save_ledger(conversation, ledger, seal=seal) != expected:
                return False  # another writer in between: the pointer would be wrong
        return True


@dataclass
class _Job:
    """One background digest: the head it covers and the task writing it."""

    cut: int
    """How many leading messages the digest covers."""
    hash: str
    """:func:`head_hash` of those messages."""
    task: asyncio.Task[Summary]
    """The summary call."""
    store: _HeldStore | None = None
    """Its held memory writes."""
    cancelled: bool = field(default=False)
    """Cancelled by :meth:`AheadCompactor.cancel`."""


def _here(job: _Job) -> bool:
    """Whether ``job`` runs on the running event loop (a closed loop's task never ends)."""
    return job.task.get_loop() is asyncio.get_running_loop()


def _stop(job: _Job) -> None:
    """Cancel ``job``'s task, from its own loop (a closed loop has stopped it already)."""
    task, loop = job.task, job.task.get_loop()
    if task.done() or loop.is_closed():
        return
    if _here(job):
        task.cancel()
    else:
        loop.call_soon_threadsafe(task.cancel)


def _covers(job: _Job, messages: Sequence[AgentMessage]) -> bool:
    """Whether ``job``'s head is still the head of ``messages``."""
    if job.cut > len(messages) or not _here(job):
        return False
    return head_hash(messages[: job.cut]) == job.hash


class AheadCompactor:
    """A condenser's async driver that prepares the next digest before the gate fires.

    >>> import asyncio
    >>> from window_budget import BudgetPolicy, Model, UserMessage, create_condenser
    >>> policy = BudgetPolicy(precompact_ratio=0.5)
    >>> ahead = AheadCompactor(create_condenser(model=Model("m", 8192), policy=policy))
    >>> asyncio.run(ahead.run([UserMessage("hi")])).reason
    'under-budget'

    Args:
        condenser: the condenser whose policy (``precompact_ratio``), model and completer
            are used; without ``precompact_ratio`` nothing starts early.
        timeout: seconds a background digest may take before it is given up.

    """

    def __init__(self, condenser: WindowCondenser, *, timeout: float | None = 300.0) -> None:
        if timeout is not None and (isinstance(timeout, bool) or not 0 < timeout < float("inf")):
            raise ValueError(f"timeout must be None or a positive number, got {timeout!r}")
        self.condenser = condenser
        """The condenser it drives."""
        self.timeout = timeout
        """Seconds a background digest may take."""
        self._jobs: dict[str, _Job] = {}
        early = condenser.policy.precompact_ratio
        self._early: WindowCondenser | None = None
        if early is not None:
            # The same condenser with the gate at the lower mark: where it would cut there.
            policy = replace(condenser.policy, trigger_ratio=early, precompact_ratio=None)
            self._early = WindowCondenser(replace(condenser.deps, policy=policy))

    def state(self, conversation: str | None = None) -> AheadState:
        """Where ``conversation``'s background digest stands."""
        job = self._jobs.get(self._name(conversation))
        if job is None:
            return "none"
        if job.cancelled or job.task.cancelled():
            return "cancelled"
        if not job.task.done():
            return "running"
        if job.task.exception() is not None or job.task.result().fallback:
            return "failed"
        return "ready"

    async def wait(self, conversation: str | None = None) -> AheadState:
        """Wait until ``conversation``'s background digest ends; its state (never raises)."""
        job = self._jobs.get(self._name(conversation))
        if job is not None and _here(job):  # another loop's task: not awaitable here
            await asyncio.wait({job.task})
        return self.state(conversation)

    def cancel(self, conversation: str | None = None) -> bool:
        """Cancel ``conversation``'s background digest; True when one was running."""
        job = self._jobs.get(self._name(conversation))
        if job is None or job.task.done():
            return False
        job.cancelled = True
        _stop(job)
        return True

    async def aclose(self) -> None:
        """Cancel every background digest and wait for them to stop."""
        jobs = list(self._jobs.values())
        self._jobs.clear()
        for job in jobs:
            _stop(job)
        here = {job.task for job in jobs if _here(job)}
        if here:
            await asyncio.wait(here)

    def _name(self, conversation: str | None) -> str:
        return conversation or self.condenser.deps.conversation

    # -- the turn --------------------------------------------------------------

    async def run(
        self,
        messages: Sequence[AgentMessage],
        *,
        pinned_tokens: int = 0,
        conversation: str | None = None,
        system_prompt: str = "",
        force: bool = False,
    ) -> CondenseResult:
        """``WindowCondenser.run``, using a ready digest and starting the next one early.

        ``system_prompt`` is the agent's, as sent (for ``summary_request="prefix"``).

        Raises:
            BudgetError: the result cannot be made to fit; the message says what does not.
            CancelledByToken: the condenser's signal fired; the input is untouched.

        """
        condenser, name = self.condenser, self._name(conversation)
        if past := past_boundary(messages, pinned_tokens, condenser.deps.counter):
            # A provider's compaction pins everything up to it (``pipeline._boundary``).
            options = past.options(force, conversation)
            del options["cut"]
            return past.rebase(await self.run(past.tail, system_prompt=system_prompt, **options))
        decision = condenser.decide(messages, force=force, pinned_tokens=pinned_tokens)
        if decision.result is not None:
            condenser.archive_masked(decision.result, name)
            if decision.result.reason == "under-budget":
                self._prepare(messages, pinned_tokens, name, system_prompt)
            return decision.result
        if condenser.policy.strategy != "summarize" and not force:
            return condenser.finish(messages, decision, None)
        ready = self._take(name, messages, decision, force=force)
        if ready is not None:
            cut, summary = ready
            return condenser.finish(
                messages, replace(decision, plan=plan_at(messages, cut)), summary, force=force
            )
        deps = self._deps(decision, name, system_prompt)
        summary = await summarize(decision.plan.dropped, deps)
        return condenser.finish(messages, decision, summary, force=force)

    def _deps(
        self,
        decision: CondenseDecision,
        name: str,
        system_prompt: str,
        memory: MemoryStore | None = None,
    ) -> SummarizeDeps:
        deps = self.condenser.summarize_deps(decision, name)
        cdeps = self.condenser.deps
        policy = deps.policy
        if cdeps.summarizer_model is not None and cdeps.summarizer_model != cdeps.model:
            # Another model has another cache: its prefix would be a full-price prompt.
            policy = replace(policy, summary_request="scrollback")
        deps = replace(deps, system_prompt=system_prompt, policy=policy)
        return deps if memory is None else replace(deps, memory=memory)

    def _prepare(
        self, messages: Sequence[AgentMessage], pinned: int, name: str, system_prompt: str
    ) -> None:
        """Start the background digest when the prompt is past the lower mark (once per head)."""
        early, model = self._early, self.condenser.deps.model
        if early is None or model is None or self.condenser.policy.strategy != "summarize":
            return
        job = self._jobs.get(name)
        if job is not None and _covers(job, messages):
            # Running, ready, failed or cancelled for a head this transcript still starts
            # with: kept (one call per head; the trigger's turn retries a failed one).
            return
        try:
            shadow = early.decide(messages, pinned_tokens=pinned)
        except BudgetError:
            return  # the lower mark leaves no room: the synchronous path will say why
        if shadow.result is not None or shadow.plan.cut == 0:
            return  # under the lower mark, or masking would do
        self._drop(name)
        # The digest gets the room the gate gives at the trigger, not at the lower mark.
        room = int(budget_limit(model, self.condenser.policy)) - pinned
        cap = digest_budget(model.context_window, self.condenser.policy.digest_max_tokens)
        decision = replace(shadow, digest_budget=min(cap, max(MIN_DIGEST_TOKENS, room // 4)))
        store = self.condenser.deps.memory
        held = _HeldStore(store, name) if store is not None else None
        deps = self._deps(decision, name, system_prompt, held)
        head = decision.plan.dropped
        # A fresh context: the call outlives this turn, so it must not report to the turn's
        # callbacks or span (a framework's run may have ended when it replies).
        task = asyncio.get_running_loop().create_task(
            self._write(head, deps), context=contextvars.Context()
        )
        if len(self._jobs) >= MAX_JOBS:
            self._drop(next(iter(self._jobs)))
        self._jobs[name] = _Job(decision.plan.cut, head_hash(head), task, held)

    async def _write(self, head: Sequence[AgentMessage], deps: SummarizeDeps) -> Summary:
        if self.timeout is None:
            return await summarize(head, deps)
        return await asyncio.wait_for(summarize(head, deps), self.timeout)

    def _drop(self, name: str) -> None:
        job = self._jobs.pop(name, None)
        if job is not None:
            _stop(job)

    def _take(
        self,
        name: str,
        messages: Sequence[AgentMessage],
        decision: CondenseDecision,
        *,
        force: bool,
    ) -> tuple[int, Summary] | None:
        """The ready digest and its cut when it is usable for ``messages``, else None."""
        job = self._jobs.pop(name, None)
        if job is None or not _here(job):
            return None
        task = job.task
        if not task.done():
            task.cancel()  # not ready: this turn takes the synchronous path
            return None
        if task.cancelled() or task.exception() is not None:
            return None
        summary = task.result()
        cut = job.cut
        if summary.fallback or not 0 < cut < len(messages):
            return None  # the model failed (the synchronous path tries it again)
        if force and cut != decision.plan.cut:
            return None
        if blocked_cuts(messages)[cut] or head_hash(messages[:cut]) != job.hash:
            return None  # the head changed (rewritten, masked): the digest is stale
        counter = self.condenser.deps.counter
        after = estimate_tokens([summary.message, *messages[cut:]], counter) + decision.pinned
        if not force and after > decision.limit * LAND_SHARE:
            return None
        if job.store is not None and not job.store.commit():
            return None
        return cut, summary
