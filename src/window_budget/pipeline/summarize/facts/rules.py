"""Extraction: the rules that read typed facts from messages, and the merge of two ledgers."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Final

from window_budget.budget import ToolGroups
from window_budget.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Content,
    DigestMessage,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    content_text,
)
from window_budget.pipeline.summarize.facts.calls import classify_tool_call, key_error_line
from window_budget.pipeline.summarize.facts.model import (
    Fact,
    FactLedger,
    Provenance,
    _Builder,
    _capped,
)
from window_budget.pipeline.summarize.facts.names import _add_idents, _with_names
from window_budget.pipeline.summarize.facts.serial import ledger_from_json, ledger_from_text
from window_budget.pipeline.summarize.facts.text import (
    _PLAN_LINE_RE,
    _norm_key,
    _sentences,
    code,
    cut_words,
    one_line,
)

__all__ = ["extract_facts", "ledger_of", "merge_ledgers"]

# ------------------------------------------------------------------ patterns

_CONSTRAINT_RE = re.compile(
    r"\b(must|shouldn'?t|should not|avoid|make sure|ensure|forbidden|not allowed)\b",
    re.IGNORECASE,
)
# Words that state a rule only when said *to* someone: "Only touch src/", "Keep the API
# stable", "you can only run one command"; in a description ("the loader only reads the
# first table", "it doesn't parse comments") they state a symptom, not a constraint.
_WEAK_CONSTRAINT_RE = re.compile(
    r"\b(doesn'?t|don'?t|do not|can'?t|cannot|no more than|at most|at least)\b", re.IGNORECASE
)
# "never call", "only use", "always run": a rule; "never finished", "only reads", "always
# returns", "only has": a description (the verb is inflected, or no verb follows).
_ADVERB_RULE_RE = re.compile(
    r"\b(?:only|always|never|without)\s+(?!(?:the|a|an|this|that|these|those|it|its|one|two"
    r"|some|any|when|if|because|after|before|on|in|at|for|to|of|with|by|from)\b)"
    r"([a-z]+)\b(?<!s)(?<!ed)(?<!ing)(?<!ly)",
    re.IGNORECASE,
)
_ADVERBS_RE = re.compile(r"\b(only|always|never|without|keep)\b", re.IGNORECASE)
_ADDRESSED_RE = re.compile(
    r"^\W*(?:only|always|keep|never|no|please|use|leave|stay|do|don'?t|make|run|edit|change|add"
    r"|write|fix|move|port|commit|push|touch|return|test|build|update|stick)\b"
    r"|\b(?:you|please|we|need to|let'?s)\b",
    re.IGNORECASE,
)


_CLAUSE_RE = re.compile(r",\s+(?:and|but|so|then|also)\s+|;\s+|\s+—\s+")
# What follows "because" gives a reason: "…, because the tests only cover the happy path"
# describes the tests, it sets no rule.
_REASON_RE = re.compile(r"\b(?:because|given that)\b.*", re.IGNORECASE | re.DOTALL)


def _rule_clauses(sentence: str) -> list[str]:
    """The rules ``sentence`` states: itself, or those of its clauses that state one.

    A short rule stays whole ("Never push to main, CI deploys it"). Of a long sentence, or of
    one that only a clause addresses to the agent ("the old job is flaky, and don't drop the
    table"), the rule clauses: a rule in a trailing clause must not be cut off with the
    sentence's head when the digest is short of room, nor lost with the description.
    """
    whole = is_constraint(sentence)
    if whole and len(sentence) < 160:
        return [sentence]
    clauses = [c.strip(" ,") for c in _CLAUSE_RE.split(sentence) if c.strip(" ,")]
    rules = [c for c in clauses if is_constraint(c)] if len(clauses) > 1 else []
    return rules or ([sentence] if whole else [])


def is_constraint(sentence: str) -> bool:
    """True when ``sentence`` states a rule the user set, not a description of a symptom."""
    if _CONSTRAINT_RE.search(sentence):
        return True
    said = _REASON_RE.sub("", sentence)  # the rule words that follow count, not the reason's
    if _ADVERB_RULE_RE.search(said):
        return True
    weak = _WEAK_CONSTRAINT_RE.search(said) or _ADVERBS_RE.search(said)
    return bool(weak and _ADDRESSED_RE.search(sentence))


_DECISION_RE = re.compile(
    r"\b(decided|decide to|chose|choosing|going with|went with|switched|switching to|renamed"
    r"|opted|settled on|replaced|instead of|rather than|because|so that|the reason|trade-?off"
    r"|in favou?r of|we'll use|i'll use|will use|moved \S+ to|extracted|kept \S+ as)\b",
    re.IGNORECASE,
)
_DECISION_LABEL_RE = re.compile(r"^\W*(?:decision|decided)\s*:", re.IGNORECASE)
"""A sentence the agent labels as its decision ("Decision: render in-process ...")."""
_MUSING_RE = re.compile(
    r"^(let me|let's|now let me|now i|i'll (check|look|read|run|see|start|open|try)"
    r"|i need to|i should|hmm|ok(ay)?[,.]|great|perfect|good|wait|maybe|perhaps|i wonder"
    r"|looking at|first,? let)",
    re.IGNORECASE,
)
_PLAN_CUE_RE = re.compile(
    r"\b(plan|next steps?|todo|remaining|then i'll|afterwards)\b", re.IGNORECASE
)
_INJECTED_RE = re.compile(
    r"^\s*(?:\[Request interrupted by user[^\]]*\]|<task-notification>|<command-name>"
    r"|<command-message>|<command-args>|<local-command-std(?:out|err)>|<system-reminder>"
    r"|<user-prompt-submit-hook>|<bash-(?:input|stdout|stderr)>"
    r"|Caveat: The messages below were generated by the user while running local commands"
    r"|\[Image #?\d*\]\s*$|This session is being continued from a previous conversation)",
    re.IGNORECASE,
)
_REMINDER_RE = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL | re.IGNORECASE)
# Another agent's report relayed as a user turn (Claude Code's agent teams): its names count,
# as the agents' own prose does; it states no objective, ask or rule of the user's.
_RELAYED_RE = re.compile(r"^\s*<teammate-message\b", re.IGNORECASE)


# A block a reader or adapter serialised (an unknown content block, a document, extra
# metadata: ``{"type": ...}`` or ``[metadata] {...}``) was attached to the turn, not typed:
# its words are data, never the user's ask or rule.
_ATTACHED_RE = re.compile(r'^\s*(?:\[[\w.:-]+\]\s*)?\{\s*"')
_TRIVIAL_ASKS: Final = frozenset(
    {
        "ok",
        "okay",
        "k",
        "yes",
        "y",
        "no",
        "continue",
        "go on",
        "go ahead",
        "next",
        "thanks",
        "thank you",
        "proceed",
        "sure",
        "done",
        "great",
    }
)


def _typed(content: Content) -> str:
    """The text the user typed: attached, serialised blocks left out."""
    if isinstance(content, str):
        return "" if _ATTACHED_RE.match(content) else content
    return "".join(
        b.text for b in content if isinstance(b, TextBlock) and not _ATTACHED_RE.match(b.text)
    )


def _user_text(message: UserMessage) -> str:
    text = _REMINDER_RE.sub("", _typed(message.content)).strip()
    if not text or _INJECTED_RE.match(text):
        return ""
    return text


# ------------------------------------------------------------------ extraction


def _tool_target(call: ToolCallBlock) -> tuple[str, str | None]:
    return classify_tool_call(call.name, call.arguments)


def _file_op(tool: str, kind: str, existing: Fact | None) -> str:
    name = tool.lower()
    if re.search(r"delete|remove|\brm\b|unlink", name):
        return "deleted"
    if kind == "read":
        return existing.status if existing is not None else "read"
    if re.search(r"^write$|create|new_file|write_file", name) and (
        existing is None or existing.status in ("read", "deleted")
    ):
        return "created"
    if existing is not None and existing.status == "created":
        return "created"
    return "edited"


def _error_line(text: str) -> str:
    return cut_words(one_line(key_error_line(text, limit=0)), 300)


def _same_step(failed: str, passed: str) -> bool:
    """True when ``passed`` re-ran ``failed``: the same words, give or take trailing flags."""
    if failed == passed:
        return True
    a, b = failed.split(), passed.split()
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return (
        len(short) >= 2
        and long_[: len(short)] == short
        and all(w.startswith("-") for w in long_[len(short) :])
    )


def _resolve(b: _Builder, target: str, shell: bool) -> None:
    """A step that succeeded resolves the open errors of the same step."""
    for full, fact in list(b.facts.items()):
        if (
            fact.kind == "error"
            and fact.status == "open"
            and (fact.detail == target or (shell and _same_step(fact.detail, target)))
        ):
            b.facts[full] = replace(fact, status="resolved", resolved_by=b.pos)


def _fail(b: _Builder, target: str, label: str, output: str) -> None:
    line = _error_line(output)
    shape = re.sub(r"\d+", "#", line)  # the same error at another line number is no news
    b.put("error", f"{target}\x00{shape}", f"{label} failed: {line}", status="open", detail=target)


def _on_user(b: _Builder, msg: UserMessage) -> None:
    relayed = _REMINDER_RE.sub("", _typed(msg.content))
    if _RELAYED_RE.match(relayed):
        _on_prose(b, relayed)
        return
    text = _user_text(msg)
    if not text or _norm_key(text) in _TRIVIAL_ASKS:
        return
    if not any(f.kind == "objective" for f in b.facts.values()):
        b.put("objective", "objective", one_line(text))
    else:
        b.put("ask", _norm_key(text), one_line(text))
    for sentence in _sentences(text):
        for rule in _rule_clauses(sentence):
            b.put("constraint", _norm_key(rule), one_line(rule), replace_text=False)
    _add_idents(b, text, by_user=True)


def _on_assistant(
    b: _Builder, msg: AssistantMessage, results: Mapping[str, ToolResultMessage]
) -> None:
    blocks = (TextBlock(msg.content),) if isinstance(msg.content, str) else msg.content
    for block in blocks:
        if isinstance(block, TextBlock):
            _on_prose(b, block.text)
        elif isinstance(block, ToolCallBlock):
            _on_call(b, block, results.get(block.id))


def _on_prose(b: _Builder, text: str) -> None:
    text = text.strip()
    if not text:
        return
    steps = [m.group(1).strip() for ln in text.splitlines() if (m := _PLAN_LINE_RE.match(ln))]
    if len(steps) >= 2 and (_PLAN_CUE_RE.search(text) or len(steps) >= 3):
        # Earlier plans stay, marked earlier (they leave first under pressure): a prose plan
        # does not say which of the old steps are done. A todo list does, see _on_todos.
        for full, fact in list(b.facts.items()):
            if fact.kind == "plan":
                b.facts[full] = replace(fact, status="earlier")
        for step in steps[:12]:
            b.put("plan", _norm_key(step), one_line(step), status="open")
    for sentence in _sentences(text):
        if _PLAN_LINE_RE.match(sentence) and len(steps) >= 2:
            _add_idents(b, sentence, by_user=False)  # a list item's names are names too
            continue
        if _MUSING_RE.match(sentence) or sentence.endswith("?"):
            continue  # thinking aloud: neither a decision nor a source of names
        decided = _DECISION_RE.search(sentence) or _DECISION_LABEL_RE.match(sentence)
        if decided and len(sentence) >= 20:
            b.put("decision", _norm_key(sentence), one_line(sentence))
        _add_idents(b, sentence, by_user=False)


def _on_call(b: _Builder, call: ToolCallBlock, result: ToolResultMessage | None) -> None:
    kind, value = _tool_target(call)
    failed = result is not None and result.is_error
    status = "no result" if result is None else ("failed" if failed else "ok")
    if call.name.lower() in ("todowrite", "todo_write", "update_plan"):
        _on_todos(b, call.arguments)
        return
    if kind in ("write", "touch", "read") and value is not None:
        existing = b.get("file", value)
        op = _file_op(call.name, kind, existing)
        if kind == "touch" and existing is None:
            op = "read"
        if existing is not None and existing.status == "read" and op != "read":
            b.set(replace(existing, count=0))  # reads do not count as edits
        bump = 0 if op == "read" and existing is not None and existing.status != "read" else 1
        note = "last edit failed" if failed and op != "read" else ""
        b.put("file", value, value, status=op, detail=note, bump=bump)
        b.put("step", "last", f"{call.name} {code(value)} ({status})")
        target = f"{call.name}\x00{value}"
        if failed and result is not None:
            _fail(b, target, f"{call.name} {code(value)}", content_text(result.content))
        elif not failed:
            _resolve(b, target, shell=False)
        return
    if kind == "shell" and value is not None:
        _on_command(b, value, status, None if result is None else content_text(result.content))
        return
    b.put("step", "last", f"{one_line(call.name)} ({status})")
    if failed and result is not None:
        _fail(b, call.name, one_line(call.name), content_text(result.content))


def _on_todos(b: _Builder, arguments: Mapping[str, object]) -> None:
    todos = arguments.get("todos") or arguments.get("plan")
    if not isinstance(todos, list):
        return
    for full, fact in list(b.facts.items()):
        if fact.kind == "plan":
            del b.facts[full]
    for item in todos[:20]:
        if not isinstance(item, Mapping):
            continue
        text = item.get("content") or item.get("step") or item.get("text")
        state = str(item.get("status", ""))
        if isinstance(text, str) and text.strip() and state != "completed":
            b.put("plan", _norm_key(text), one_line(text), status=state)


def _on_command(
    b: _Builder, command: str, status: str, output: str | None, *, by: Provenance = "assistant"
) -> None:
    cmd = one_line(command)
    old = b.get("command", cmd)
    fails = int(old.detail or 0) if old is not None and old.detail.isdigit() else 0
    failed = status not in ("ok", "no result")
    b.put("command", cmd, cmd, status=status, detail=str(fails + int(failed)), by=by)
    b.put("step", "last", f"ran {code(cut_words(cmd, 160))} ({status})", by=by)
    if failed and output is not None and status != "cancelled":
        shown = code(cut_words(cmd, 160))
        _fail(b, cmd, f"{shown} ({status})" if status.startswith("exit") else shown, output)
    elif status == "ok":
        _resolve(b, cmd, shell=True)


def _carried(message: AgentMessage) -> FactLedger | None:
    """The ledger a digest in the transcript carries (its own, or read from its text)."""
    if isinstance(message, DigestMessage):
        from window_budget.digest import digest_body

        if message.facts is not None:
            try:
                ledger = ledger_from_json(message.facts)
            except ValueError:
                pass  # a damaged ledger: fall back to what the text says
            else:
                if any(f.kind == "objective" for f in ledger.facts):
                    return ledger
                # A record too small for the objective: its text still states it.
                said = ledger_from_text(digest_body(message) or "").of_kind("objective")
                return replace(ledger, facts=(*said[:1], *ledger.facts))
        return ledger_from_text(digest_body(message) or "")
    if isinstance(message, CompactionSummaryMessage | BranchSummaryMessage):
        return _with_names(ledger_from_text(message.summary))
    return None


def extract_facts(
    messages: Sequence[AgentMessage],
    *,
    prior: FactLedger | None = None,
) -> FactLedger:
    """Fold ``messages`` into ``prior`` (or a new ledger); returns the merged ledger.

    Digests among ``messages`` (a :class:`DigestMessage` with its ledger, or a summary
    another tool wrote) are merged, not re-read as turns, and take no archive position;
    every other message takes the next one.

    >>> from window_budget.messages import UserMessage
    >>> ledger = extract_facts([UserMessage("Port it to TOML. Never touch migrations/.")])
    >>> [(f.kind, f.text) for f in ledger.facts][:2]
    [('objective', 'Port it to TOML. Never touch migrations/.'),
     ('constraint', 'Never touch migrations/.')]
    """
    base = prior or FactLedger()
    b = _Builder({f"{f.kind}\x00{f.key}": f for f in base.facts}, base.archived)
    groups = ToolGroups(messages)
    generations = base.generations
    for j, msg in enumerate(messages):
        carried = _carried(msg)
        if carried is not None:
            merged = merge_ledgers(FactLedger(tuple(b.facts.values()), b.pos, generations), carried)
            b.facts = {f"{f.kind}\x00{f.key}": f for f in merged.facts}
            generations = merged.generations
            continue
        match msg:
            case UserMessage():
                _on_user(b, msg)
            case AssistantMessage():
                _on_assistant(b, msg, _answers(messages, groups.results(j)))
            case BashExecutionMessage():
                _on_shell(b, msg)
        b.pos += 1
    return _capped(FactLedger(tuple(b.facts.values()), b.pos, generations + 1))


def _answers(
    messages: Sequence[AgentMessage], indexes: Iterable[int]
) -> dict[str, ToolResultMessage]:
    """The results at ``indexes`` by call id (a retried call: its last result)."""
    out: dict[str, ToolResultMessage] = {}
    for r in indexes:
        result = messages[r]
        if isinstance(result, ToolResultMessage):
            out[result.tool_call_id] = result
    return out


def _on_shell(b: _Builder, msg: BashExecutionMessage) -> None:
    command = msg.command.strip()
    if command:
        status = (
            "cancelled"
            if msg.cancelled
            else (f"exit {msg.exit_code}" if msg.exit_code not in (0, None) else "ok")
        )
        _on_command(b, command, status, msg.output, by="user")  # the user ran it


def merge_ledgers(old: FactLedger, new: FactLedger) -> FactLedger:
    """Merge two ledgers deterministically: one fact per (kind, key), ``old``'s objective wins.

    Counts add, first/last widen, the newer text and status win (an error one side
    resolved stays resolved).
    """
    out: dict[str, Fact] = {f"{f.kind}\x00{f.key}": f for f in old.facts}
    has_objective = any(f.kind == "objective" for f in old.facts)
    for fact in new.facts:
        if fact.kind == "objective" and has_objective:
            continue
        slot = f"{fact.kind}\x00{fact.key}"
        mine = out.get(slot)
        if mine is None:
            out[slot] = fact
            continue
        resolved = "resolved" if "resolved" in (mine.status, fact.status) else fact.status
        out[slot] = replace(
            fact,
            first=min(mine.first, fact.first)
            if mine.first >= 0 <= fact.first
            else max(mine.first, fact.first),
            last=max(mine.last, fact.last),
            count=mine.count + fact.count,
            status=resolved or mine.status,
            resolved_by=fact.resolved_by if fact.resolved_by is not None else mine.resolved_by,
        )
    return _capped(
        FactLedger(
            tuple(out.values()),
            max(old.archived, new.archived),
            max(old.generations, new.generations),
        )
    )


def ledger_of(message: AgentMessage) -> FactLedger | None:
    """The ledger a digest message carries (parsed), or None for any other message."""
    return _carried(message)
