"""The readers' cells: every string of each transcript fixture, the file's name, and
provider block kinds the fixtures lack."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from injection.checks import Cell, Evidence
from injection.evidence import core_evidence, inspect
from injection.payloads import OBJECTIVE, PAYLOADS, carries_payload
from window_budget.messages import message_to_dict
from window_budget.readers import read_transcript, write_transcript

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "transcripts"
MULTI_RUN = {"openhands_output.jsonl", "tau_bench_results.json"}
"""Files of many runs: a leaf under run N is read with ``run=N``."""


def _load(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


def _dump(path: Path, doc: Any) -> None:
    if path.suffix == ".jsonl":
        text = "\n".join(json.dumps(line, ensure_ascii=False) for line in doc) + "\n"
    else:
        text = json.dumps(doc, ensure_ascii=False, indent=1)
    path.write_text(text, encoding="utf-8")


def leaves(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every string in a JSON document."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from leaves(value, (*path, i))
    elif isinstance(node, str):
        yield path


def _set(doc: Any, path: tuple[Any, ...], value: str) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def _chain(doc: Any, path: tuple[Any, ...]) -> list[dict[str, Any]]:
    chain = []
    for key in path[:-1]:
        if isinstance(doc, dict):
            chain.append(doc)
        doc = doc[key]
    if isinstance(doc, dict):
        chain.append(doc)
    return chain


_TEXT_TYPES = {None, "text", "user", "human", "message"}
"""``type`` values on the way to a user's own text (a line, a message, a text block)."""


def trust(name: str, doc: Any, path: tuple[Any, ...]) -> str:
    """Who the file says wrote this string (ground truth, by format, not by the readers).

    ``"user"``: a user turn's text, a task's instruction or issue. ``"summary"``: another
    tool's compaction summary, which the design reads by its headings (facts ``by``
    ``digest``). ``""``: anything else — tool output, an observation, a block of another
    type inside a user turn, names, ids, metadata.
    """
    last = path[-1]
    chain = _chain(doc, path)
    line = chain[0] if chain else {}
    if last == "summary" and line.get("type") in ("compaction", "branch_summary", "summary"):
        return "summary"
    if line.get("isCompactSummary") and path[1] == "message":
        return "summary"
    if any(
        d.get("type") not in _TEXT_TYPES or d.get("block_type") not in (None, "text") for d in chain
    ):
        return ""
    if last == "instruction":  # OpenHands' and tau-bench's task
        return "user"
    if last not in ("content", "text", "message"):
        return ""
    if name.startswith("openhands"):
        event = next((d for d in reversed(chain) if "source" in d), {})
        own = event.get("source") == "user" and event.get("action") == "message"
    elif name.startswith("swe_agent"):
        items = doc.get("history", [])
        task = next(
            (i for i, h in enumerate(items) if h.get("role") == "user" and not h.get("is_demo")),
            None,
        )
        own = path[0] == "history" and path[1] == task
    elif name.startswith("langchain"):
        own = any(d.get("type") == "human" for d in chain)
    elif name.startswith("claude_code"):
        own = line.get("type") == "user"
    else:
        role = next((d["role"] for d in reversed(chain) if isinstance(d.get("role"), str)), None)
        own = role == "user"
    return "user" if own else ""


def reader_cell(name: str, doc: Any, path: tuple[Any, ...], variant: str, tmp: Path) -> Cell:
    payload = PAYLOADS[variant]
    hostile = copy.deepcopy(doc)
    _set(hostile, path, payload)
    target = tmp / name
    _dump(target, hostile)
    cell = Cell(f"reader:{name}", "/".join(map(str, path)), variant, trust=trust(name, doc, path))
    ev = Evidence(cli=[inspect(target), inspect(target, "--whole-file")])
    run = path[0] if name in MULTI_RUN and isinstance(path[0], int) else None
    try:
        transcript = read_transcript(target, whole_file=True, run=run)
    except Exception as exc:  # a refused file is no escape; say so
        cell.note = f"refused ({type(exc).__name__})"
        return cell.judge(ev)
    dumped = json.dumps([message_to_dict(m) for m in transcript.messages], ensure_ascii=False)
    if not carries_payload(dumped):
        cell.note = "not read into messages"
        return cell.judge(ev)
    cell.reached = True
    found, compacted = core_evidence(transcript.messages, tmp)
    ev.ledgers, ev.digests, ev.prompts, ev.recalls = (
        found.ledgers,
        found.digests,
        found.prompts,
        found.recalls,
    )
    ev.cli += found.cli
    again = tmp / f"again{target.suffix}"
    with contextlib.suppress(Exception):  # a format with no place for a digest
        write_transcript(compacted, again, format=transcript.format)
        ev.cli.append(inspect(again))
    return cell.judge(ev)


def file_name_cell(fixture: Path, variant: str, tmp: Path) -> Cell:
    name = PAYLOADS[variant].replace("/", "\u2215")[:120] + fixture.suffix
    folder = tmp / "named"
    folder.mkdir(exist_ok=True)
    target = folder / name
    target.write_bytes(fixture.read_bytes())
    ev = Evidence(cli=[inspect(target), inspect(folder)])
    cell = Cell(f"reader:{fixture.name}", "file name", variant, reached=True).judge(ev)
    target.unlink()
    return cell


SLOT = "<payload>"
_SEARCH = {"type": "search_result", "source": "https://docs.example", "title": "setup"}
EXTRA_DOCS: dict[str, Any] = {
    # Block kinds the fixtures lack, as the providers document them: what a retriever or a
    # tool hands over inside a *user* turn.
    "anthropic_blocks.json": {
        "messages": [
            {"role": "user", "content": OBJECTIVE},
            {"role": "assistant", "content": "Searching."},
            {"role": "user", "content": [{**_SEARCH, "content": [{"type": "text", "text": SLOT}]}]},
            {"role": "assistant", "content": "Reading the attachment."},
            {
                "role": "user",
                "content": [
                    {
                        "type": "document",
                        "title": SLOT,
                        "source": {"type": "text", "media_type": "text/plain", "data": SLOT},
                    }
                ],
            },
        ]
    },
    "openai_parts.json": [
        {"role": "user", "content": OBJECTIVE},
        {"role": "assistant", "content": "Send the file."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "here"},
                {"type": "file", "file": {"filename": SLOT, "file_data": "data:;base64,AA"}},
            ],
        },
        {"role": "assistant", "content": "ok", "refusal": SLOT},
        {"role": "tool", "tool_call_id": "x", "name": "fetch", "content": SLOT},
    ],
}
"""Extra documents: each ``<payload>`` string is one cell."""


def fixtures() -> list[Path]:
    return sorted(p for p in FIXTURES.iterdir() if p.suffix in (".json", ".jsonl", ".traj"))


def reader_cells(variants: Sequence[str], tmp: Path) -> list[Cell]:
    cells = []
    for fixture in fixtures():
        doc = _load(fixture)
        for variant in variants:
            cells.append(file_name_cell(fixture, variant, tmp))
            for path in leaves(doc):
                cells.append(reader_cell(fixture.name, doc, path, variant, tmp))
    for name, doc in EXTRA_DOCS.items():
        slots = [p for p in leaves(doc) if _get(doc, p) == SLOT]
        for variant in variants:
            for path in slots:
                cells.append(reader_cell(name, doc, path, variant, tmp))
    return cells


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc
