"""Real Claude Code sessions against the agent's own compaction summary (``--real DIR``).

Claude Code folds a long session into a summary written by the agent's own model. Each such
summary is the yardstick: the file paths, identifiers, commands and errors it kept (and that
occur verbatim in the turns it folded) are looked for in what this library keeps of the same
turns — the network-free digest plus the kept tail — at a digest budget of the summary's own
size. The turns a summary folded run from the summary before it (which the model saw) on.

Three shapes of session are read:

- Claude Code's own ``*.jsonl`` (an ``isCompactSummary`` record), by ``read_transcript``;
- a Markdown export, ``## User (…)`` / ``## Assistant (…)`` turns with tools as
  ``- **Used Read** on `path``` (no tool outputs);
- a terminal copy of the console, ``> `` user turns, ``⏺`` replies and tool calls
  (``⏺ Bash(cmd)``) with their output under ``⎿``, ``✻ Thinking…`` blocks.

Used by ``bench_fact_retention.py --real DIR``; the sessions measured are in
``bench/data/claude_code/`` (see its README for where each came from).
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Any

from window_budget import (
    AgentMessage,
    AssistantMessage,
    BudgetPolicy,
    Model,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
)
from window_budget.budget import count_text
from window_budget.digest import digest_body, is_digest
from window_budget.messages import CompactionSummaryMessage, DigestMessage, message_text
from window_budget.readers import read_transcript

CONTINUED = "This session is being continued"
"""How every Claude Code compaction summary starts."""

_REAL_RES = (
    re.compile(r"(?<![\w.-])(?:/?[\w.-]+/)+[\w-]+\.\w{1,8}\b"),  # paths
    re.compile(r"`([^`\n]{3,80})`"),  # code spans: commands, identifiers
    re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b"),  # CamelCase
    re.compile(r"\b[a-z_][a-z0-9]*(?:_[a-z0-9]+)+\b"),  # snake_case names
    re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}\b"),  # env vars
    re.compile(r"\b\w*(?:Error|Exception)\b[^\n]{0,60}"),  # errors
)
_PATH_KEYS = {"Read": "file_path", "Edit": "file_path", "Write": "file_path", "Update": "file_path"}
_PATH_KEYS |= {"MultiEdit": "file_path", "Grep": "pattern", "Glob": "pattern", "Search": "pattern"}


def _call_args(name: str, target: str) -> dict[str, object]:
    key = _PATH_KEYS.get(name, "command" if name == "Bash" else "description")
    return {key: target}


# ------------------------------------------------------------------ Markdown export

_MD_TURN = re.compile(r"^## (User|Assistant) \((?:[^)]*)\)\s*$", re.MULTILINE)
_MD_TOOL = re.compile(r"^- \*\*Used (\w+)\*\*(?::\s*(.+)| (?:on|for) (?:`([^`]+)`.*|(.+)))?$")


def markdown_session(text: str) -> list[AgentMessage]:
    """A Claude Code session exported as Markdown (``## User (…)`` / ``## Assistant (…)``
    turns, tools as ``- **Used Read** on `path```; outputs are not in the export)."""
    parts = _MD_TURN.split(text)
    out: list[AgentMessage] = []
    n = 0
    for role, body in zip(parts[1::2], parts[2::2], strict=False):
        body = body.strip()
        if role == "User":
            if body.startswith(CONTINUED):
                out.append(CompactionSummaryMessage(body))
            elif body:
                out.append(UserMessage(body))
            continue
        prose, calls = [], []
        for line in body.splitlines():
            tool = _MD_TOOL.match(line.strip())
            if tool is None:
                prose.append(line)
                continue
            n += 1
            name, described, target, plain = tool.groups()
            said = target or described or plain or ""  # "on `path`", ": text" or "on task 5"
            calls.append(ToolCallBlock(f"md{n}", name, _call_args(name, said)))
        blocks = [TextBlock("\n".join(prose).strip())] if "".join(prose).strip() else []
        if blocks or calls:
            out.append(AssistantMessage((*blocks, *calls)))
            out += [ToolResultMessage(c.id, c.name, "(output not in the export)") for c in calls]
    return out


# ------------------------------------------------------------------ console copy

_CONSOLE_TOOLS = (
    "Bash|Read|Update|Write|Edit|MultiEdit|Search|List|LS|Task|Call|Grep|Glob|Fetch|WebFetch"
    "|WebSearch"
)
_CONSOLE_TOOL = re.compile(rf"^({_CONSOLE_TOOLS})\((.*)$")
_RESULT_MARK = "⎿"


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """The console's top-level blocks: a marker line (``>``, ``⏺``, ``✻``, …) and the
    indented or blank lines under it."""
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line and not line[0].isspace():
            out.append((line, []))
        elif out:
            out[-1][1].append(line)
    return out


def _dedent(lines: list[str]) -> str:
    return "\n".join(line[2:] if line.startswith("  ") else line.strip() for line in lines).strip()


def console_session(text: str) -> list[AgentMessage]:
    """A Claude Code session copied from the terminal: ``> `` user turns (a compaction's
    summary among them), ``⏺`` replies and ``⏺ Tool(args)`` calls with their output under
    ``⎿``, ``✻ Thinking…`` blocks. Banners, ``/cost`` tables and separators are skipped."""
    out: list[AgentMessage] = []
    n = 0
    for head, rest in _blocks(text):
        if head.startswith("> "):
            said = _dedent([head[2:], *rest])
            said = said.split(f"\n{_RESULT_MARK}", 1)[0].strip()  # a slash command's output
            if said.startswith(CONTINUED):
                out.append(CompactionSummaryMessage(said))
            elif said and not said.startswith("/"):
                out.append(UserMessage(said))
        elif head.startswith("✻ Thinking"):
            thought = _dedent(rest)
            if thought:
                out.append(AssistantMessage((ThinkingBlock(thought),)))
        elif head.startswith("⏺ "):
            first = head[2:]
            tool = _CONSOLE_TOOL.match(first)
            if tool is None and first.rstrip("…") == "Update Todos":
                tool = re.match(r"(Update Todos)()", first)
            if tool is None:
                out.append(AssistantMessage(_dedent([first, *rest])))
                continue
            marks = [i for i, line in enumerate(rest) if line.strip().startswith(_RESULT_MARK)]
            cut = marks[0] if marks else len(rest)
            call = " ".join([tool.group(2), *(line.strip() for line in rest[:cut])]).strip()
            call = re.sub(r"\)?…?$", "", call.rstrip()).strip()
            output = _dedent(rest[cut:]).removeprefix(_RESULT_MARK).strip()
            output = re.sub(rf"^{_RESULT_MARK}\s?", "", output, flags=re.MULTILINE)
            n += 1
            name = tool.group(1).replace(" ", "")
            out.append(AssistantMessage((ToolCallBlock(f"c{n}", name, _call_args(name, call)),)))
            failed = output.startswith(("Error", "No (tell Claude"))
            out.append(ToolResultMessage(f"c{n}", name, output, is_error=failed))
    return out


# ------------------------------------------------------------------ the scenario


def read_session(path: Path) -> list[AgentMessage]:
    """The messages of one session file, whichever of the three shapes it is."""
    if path.suffix == ".jsonl":
        return list(read_transcript(path, skip_bad=True).messages)
    text = path.read_text(encoding="utf-8")
    if _MD_TURN.search(text):
        return markdown_session(text)
    return console_session(text)


def summary_items(summary: str, source: str) -> set[str]:
    """What the agent's summary kept that the folded turns say verbatim: paths, code spans,
    CamelCase and snake_case names, environment variables, error lines (4+ characters)."""
    items = set()
    for pattern in _REAL_RES:
        for match in pattern.finditer(summary):
            value = (match.group(1) if pattern.groups else match.group(0)).strip()
            if len(value) >= 4 and value in source:
                items.add(value)
    return items


def _text_of(messages: list[Any]) -> str:
    return "\n".join(digest_body(m) or "" if is_digest(m) else message_text(m) for m in messages)


def _condense(folded: list[AgentMessage], counter: Any, keep: int, budget: int) -> Any:
    condenser = create_condenser(
        model=Model("m", 1_000_000),
        counter=counter,
        policy=BudgetPolicy(keep_recent=keep, digest_max_tokens=max(256, budget)),
    )
    return condenser.run_sync(folded, force=True)


def measure_file(path: Path, counter: Any) -> list[dict[str, Any]]:
    """One row per compaction in ``path`` with 10+ folded messages and 5+ items.

    Two runs per compaction: the digest at the summary's size plus a 2,000-token kept tail
    (``kept``), and digest plus kept tail together within the summary's size (``kept_same``:
    a quarter of it kept verbatim, the digest gets the rest).
    """
    msgs = read_session(path)
    marks = [
        i for i, m in enumerate(msgs) if isinstance(m, CompactionSummaryMessage | DigestMessage)
    ]
    rows: list[dict[str, Any]] = []
    start = 0
    for k in marks:
        summary = (
            message_text(msgs[k])
            if not isinstance(msgs[k], DigestMessage)
            else digest_body(msgs[k]) or ""
        )
        folded = msgs[start:k]  # from the previous summary (the model saw it) on
        start = k
        if len(folded) < 10:
            continue
        items = summary_items(summary, "\n".join(message_text(m) for m in folded))
        if len(items) < 5:
            continue
        size = count_text(summary, counter)
        result = _condense(folded, counter, 2000, size)
        if result.summary is None:
            continue
        ours = _text_of(list(result.messages))
        digest = result.summary.text
        tail = _text_of(list(result.messages[1:]))
        same = _condense(folded, counter, size // 4, size * 3 // 4)
        if same.summary is not None:
            spent = count_text(_text_of(list(same.messages[1:])), counter)
            if spent + count_text(same.summary.text, counter) > size:
                same = _condense(folded, counter, size // 4, size - spent)
        same_text = _text_of(list(same.messages))
        rows.append(
            {
                "file": path.name,
                "at": k,
                "folded": len(folded),
                "items": len(items),
                "kept": sum(v in ours for v in items),
                "in_digest": sum(v in digest for v in items),
                "summary_tokens": size,
                "digest_tokens": count_text(digest, counter),
                "tail_tokens": count_text(tail, counter),
                "kept_same": sum(v in same_text for v in items),
                "same_tokens": count_text(same_text, counter),
                "missed": sorted(v for v in items if v not in ours),
            }
        )
    return rows


def real_sessions(folder: Path, counter: Any, *, verbose: bool = False) -> list[dict[str, Any]]:
    """Print and return the figures of every compaction in the sessions under ``folder``."""
    print(f"\n6. Real sessions from {folder}")
    rows: list[dict[str, Any]] = []
    for path in sorted(p for p in folder.rglob("*") if p.suffix in (".jsonl", ".md", ".txt")):
        if path.name.lower() == "readme.md":
            continue
        try:
            found = measure_file(path, counter)
        except Exception as exc:  # a bench reports and moves on
            print(f"   {path.name}: unreadable ({exc})")
            continue
        for r in found:
            print(
                f"   {r['file']} @ {r['at']}: {r['items']} items the agent's summary kept; "
                f"ours hold {r['kept'] / r['items']:6.1%} (digest alone "
                f"{r['in_digest'] / r['items']:6.1%}), digest {r['digest_tokens']} tokens vs "
                f"summary {r['summary_tokens']} (kept tail {r['tail_tokens']}); within the "
                f"summary's size {r['kept_same'] / r['items']:6.1%} in {r['same_tokens']} tokens"
            )
            if verbose and r["missed"]:
                print(f"      missed: {', '.join(r['missed'][:12])}")
        rows += found
    if not rows:
        print("   no compaction with an agent-written summary found")
        return rows
    share = [r["kept"] / r["items"] for r in rows]
    alone = [r["in_digest"] / r["items"] for r in rows]
    ratio = [r["digest_tokens"] / r["summary_tokens"] for r in rows]
    same = [r["kept_same"] / r["items"] for r in rows]
    pooled = sum(r["kept"] for r in rows) / sum(r["items"] for r in rows)
    print(
        f"   median over {len(rows)} compactions in {len({r['file'] for r in rows})} files: "
        f"digest + tail {statistics.median(share):.1%} (pooled {pooled:.1%}, lowest "
        f"{min(share):.1%}), digest alone {statistics.median(alone):.1%}, digest tokens vs "
        f"the summary {statistics.median(ratio):.2f}x; digest + tail within the summary's "
        f"size {statistics.median(same):.1%} (lowest {min(same):.1%})"
    )
    return rows
