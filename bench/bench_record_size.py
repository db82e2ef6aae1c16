"""Record size over 500 turns: does the digest's record stay flat as the ledger grows?

Run by hand:  python bench/bench_record_size.py [--quick] [--turns 500]

The digest message carries a record (``additional_kwargs["window_budget"]``): its counts,
the most important facts, a pointer. It rides in message metadata that some chains print
into their prompts, so it must stay small — within 200 tokens or 1 % of the window,
whichever is larger — however long the conversation. Every turn here adds new facts (an ask
with a constraint, a ticket, paths, a decision, a failing command), so a record that held
the whole ledger would grow turn after turn.

Three runs, each driven ``--turns`` turns (500 by default):

* ``SimpleChatEngine`` with ``WindowBudgetMemory.from_defaults(llm=<scripted LLM>,
  context_window=4096)``;
* ``create_agent`` with ``WindowBudgetMiddleware(context_window=8192)`` and a scripted
  tool-calling model (one ``Edit`` or ``Bash`` call a turn, some failing);
* ``CondensePlusContextChatEngine`` over the same memory as the first: LlamaIndex prints
  every history message's ``additional_kwargs`` into its condense prompt
  (``messages_to_history_str``), the record included.

After every turn: the record's size in tokens (``json.dumps`` of it, cl100k via tiktoken
when its encoding loads offline, else the heuristic), what the memory's ``count_tokens`` /
the middleware's estimate charges for the digest message, and (condense runs) the condense
prompt's size. Reported as min / median / max per 100 turns; markdown tables on stdout, JSON
to ``bench/results/record_size.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from window_budget.budget import count_text, load_encoding
from window_budget.pipeline.summarize import CONDENSER_BRIEF

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
KEY = "window_budget"
DIGEST_REPLY = (
    "# Objective\nKeep the services moving to the new layout.\n# Guardrails\nsee the pins\n"
    "# Status\n## Active\nrenames in progress\n# Plan\ncontinue with the next module"
)


def tokenizer() -> tuple[Callable[[str], int], str]:
    """cl100k when tiktoken can load it offline, else the library's heuristic."""
    try:
        enc = load_encoding()
        return (lambda text: len(enc.encode_ordinary(text))), "cl100k (tiktoken)"
    except Exception:
        return (lambda text: count_text(text)), "heuristic (tiktoken unavailable)"


TOKENS, COUNTER = tokenizer()


def record_tokens(
    kwargs: dict[str, Any] | None, count: Callable[[str], int] = TOKENS
) -> int | None:
    record = (kwargs or {}).get(KEY)
    return None if record is None else count(json.dumps(record, ensure_ascii=False))


def measure(head: Any, charge: Callable[[Any], int], text: str) -> dict[str, Any]:
    """The record of digest message ``head`` and what the adapter charges for it."""
    size = record_tokens(head.additional_kwargs if head is not None else None)
    if size is None:
        return {"record": None}
    record = head.additional_kwargs[KEY]
    return {
        "record": size,
        "record_heuristic": record_tokens(head.additional_kwargs, count_text),
        "facts_part": TOKENS(json.dumps(record.get("facts"), ensure_ascii=False)),
        "charged": charge(head),
        "text": TOKENS(text),
        "facts": len(((record.get("facts") or {}).get("facts")) or []),
        # what LlamaIndex's messages_to_history_str prints: the repr of additional_kwargs
        "printed": TOKENS(f"\n{head.additional_kwargs}"),
    }


def ask(i: int) -> str:
    """A user turn that adds facts: an ask, a constraint, a ticket, paths, a name."""
    return (
        f"Turn {i}: move `src/svc_{i % 40}/handlers/h_{i}.py` under `services/svc_{i % 40}/` "
        f"and rename `Handler{i}` to `Svc{i}Handler` (ticket OPS-{1000 + i}). "
        f"Never touch `migrations/{i:04d}_accounts.py`, and keep `API_KEY_{i}` in the env."
    )


def answer(i: int) -> str:
    return (
        f"Switched to a shim for h_{i} because the import cycle in svc_{i % 40} broke "
        f"`pytest tests/svc_{i % 40} -q` (AssertionError: {i} != {i + 1}). Moved "
        f"services/svc_{i % 40}/h_{i}.py; next: the router."
    )


# ------------------------------------------------------------------ LlamaIndex


def scripted_llm(condense_prompts: list[str]) -> Any:
    from llama_index.core.base.llms.types import (
        ChatMessage,
        ChatResponse,
        CompletionResponse,
        LLMMetadata,
        MessageRole,
    )
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.llms import MockLLM

    class Scripted(MockLLM):
        """Answers chat turns with the scripted answer; summaries with a fixed digest;
        records every completion prompt (the condense step)."""

        _turn: int = PrivateAttr(default=0)

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(
                context_window=4096, num_output=256, is_chat_model=True, model_name="scripted"
            )

        def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
            first = messages[0] if messages else None
            brief = first is not None and first.role == MessageRole.SYSTEM
            if brief and (first.content or "").startswith(CONDENSER_BRIEF[:40]):
                return ChatResponse(message=ChatMessage(role="assistant", content=DIGEST_REPLY))
            self._turn += 1
            return ChatResponse(message=ChatMessage(role="assistant", content=answer(self._turn)))

        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            condense_prompts.append(prompt)
            return CompletionResponse(text=f"standalone question {len(condense_prompts)}")

    return Scripted()


def llama_index_run(turns: int, engine_kind: str) -> dict[str, Any]:
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.chat_engine import CondensePlusContextChatEngine, SimpleChatEngine
    from llama_index.core.embeddings import MockEmbedding

    from llama_index.memory.window_budget import WindowBudgetMemory

    condense: list[str] = []
    llm = scripted_llm(condense)
    memory = WindowBudgetMemory.from_defaults(llm=llm, context_window=4096)
    if engine_kind == "simple":
        engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    else:
        docs = [Document(text=f"Runbook {k}: " + "move services carefully " * 20) for k in range(5)]
        index = VectorStoreIndex.from_documents(docs, embed_model=MockEmbedding(embed_dim=8))
        engine = CondensePlusContextChatEngine.from_defaults(
            index.as_retriever(similarity_top_k=1), llm=llm, memory=memory
        )
    rows: list[dict[str, Any]] = []
    for i in range(1, turns + 1):
        engine.chat(ask(i))
        live = memory.get_all()
        head = live[0] if live else None
        row = {"turn": i, **measure(head, lambda m: memory.count_tokens([m]), _text(head))}
        if condense:
            row["condense_prompt"] = TOKENS(condense[-1])
            row["condense_chars"] = len(condense[-1])
        rows.append(row)
    last = memory.get_all()[0].additional_kwargs.get(KEY) if memory.get_all() else None
    return {
        "rows": rows,
        "window": 4096,
        "compactions": _li_compactions(memory),
        "last_record": last,
    }


def _text(message: Any) -> str:
    if message is None:
        return ""
    text = getattr(message, "text", None)
    return text if isinstance(text, str) else (message.content or "")


def _li_compactions(memory: Any) -> int | None:
    head = memory.get_all()[0] if memory.get_all() else None
    record = (head.additional_kwargs if head is not None else {}).get(KEY) or {}
    return record.get("compactions")


# ------------------------------------------------------------------ LangChain


def langchain_run(turns: int) -> dict[str, Any]:
    from langchain.agents import create_agent
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import StructuredTool
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_window_budget import WindowBudgetMiddleware

    class Scripted(BaseChatModel):
        """One Edit or Bash call per user turn, then an answer with a decision."""

        turn: int = 0

        @property
        def _llm_type(self) -> str:
            return "bench-scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> ChatResult:
            first = messages[0] if messages else None
            if isinstance(first, SystemMessage) and first.text == CONDENSER_BRIEF:
                return ChatResult(generations=[ChatGeneration(message=AIMessage(DIGEST_REPLY))])
            if isinstance(messages[-1], HumanMessage):
                self.turn += 1
                i = self.turn
                call = (
                    {"name": "Edit", "args": {"file_path": f"/repo/services/svc_{i % 40}/h_{i}.py"}}
                    if i % 2
                    else {"name": "Bash", "args": {"command": f"pytest tests/svc_{i % 40} -q"}}
                )
                reply = AIMessage("", tool_calls=[{**call, "id": f"c{i}", "type": "tool_call"}])
            else:
                reply = AIMessage(answer(self.turn))
            return ChatResult(generations=[ChatGeneration(message=reply)])

    def edit(file_path: str) -> str:
        """Edit a file."""
        return f"edited {file_path}: 12 lines changed"

    def bash(command: str) -> str:
        """Run a shell command."""
        return f"$ {command}\nE   AssertionError: 1 != 2\n1 failed, 40 passed in 2.1s"

    model = Scripted()
    middleware = WindowBudgetMiddleware(model, context_window=8192)
    agent = create_agent(
        model,
        tools=[StructuredTool.from_function(edit, name="Edit"), StructuredTool.from_function(bash)],
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "bench"}}
    rows: list[dict[str, Any]] = []

    def charge(message: Any) -> int:
        return middleware.engine.count_messages([message])

    for i in range(1, turns + 1):
        state = agent.invoke({"messages": [HumanMessage(ask(i))]}, config)
        head = next((m for m in state["messages"] if KEY in (m.additional_kwargs or {})), None)
        rows.append({"turn": i, **measure(head, charge, _text(head))})
    return {
        "rows": rows,
        "window": 8192,
        "compactions": middleware.compactions,
        "last_record": head.additional_kwargs.get(KEY) if head is not None else None,
    }


# ------------------------------------------------------------------ report


def per_hundred(rows: Sequence[dict[str, Any]], key: str, step: int) -> list[tuple[str, str]]:
    out = []
    for start in range(0, len(rows), step):
        values = [r[key] for r in rows[start : start + step] if r.get(key) is not None]
        label = f"{start + 1}–{start + len(rows[start : start + step])}"
        if values:
            out.append(
                (label, f"{min(values):,} / {statistics.median(values):,.0f} / {max(values):,}")
            )
        else:
            out.append((label, "no digest yet"))
    return out


def table(name: str, run: dict[str, Any], step: int) -> list[str]:
    rows = run["rows"]
    target = max(200, run["window"] // 100)
    records = [r["record"] for r in rows if r.get("record") is not None]
    lines = [
        f"\n### {name} (window {run['window']:,}; target ≤ {target} tokens; "
        f"{run['compactions']} compactions)\n",
        f"| turns | record tokens ({COUNTER.split()[0]}) | of which its facts | "
        "record (heuristic) | charged for the digest message | digest text tokens | "
        "facts in the record |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        "| | min / median / max | | | | | |",
    ]
    keys = ("record", "facts_part", "record_heuristic", "charged", "text", "facts")
    cols = [per_hundred(rows, k, step) for k in keys]
    for i, (label, _) in enumerate(cols[0]):
        lines.append(f"| {label} | " + " | ".join(c[i][1] for c in cols) + " |")
    if records:
        verdict = "flat, within target" if max(records) <= target else "OVER target"
        lines.append(f"\nlargest record {max(records):,} tokens: {verdict}")
        short = [r for r in rows if r.get("charged") is not None and r["charged"] < r["record"]]
        if short:
            lines.append(
                f"the estimate charged less than the record alone on {len(short)} turns "
                f"(first: turn {short[0]['turn']}, {short[0]['charged']} < {short[0]['record']})"
            )
    return lines


def condense_table(run: dict[str, Any], step: int) -> list[str]:
    lines = [
        "\n### CondensePlusContextChatEngine: condense prompt (window 4,096)\n",
        "| turn | condense prompt tokens | share of the window | the record as printed in it |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for r in run["rows"]:
        if r["turn"] % step == 0 and r.get("condense_prompt") is not None:
            rec = r.get("printed")
            lines.append(
                f"| {r['turn']} | {r['condense_prompt']:,} | {r['condense_prompt'] / 4096:.0%} | "
                f"{rec if rec is not None else '–'} |"
            )
    sizes = [r["condense_prompt"] for r in run["rows"] if r.get("condense_prompt") is not None]
    if sizes:
        over = sum(s > 4096 for s in sizes)
        lines.append(
            f"\nlargest condense prompt {max(sizes):,} tokens; over the 4,096 window on "
            f"{over} of {len(sizes)} turns"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--quick", action="store_true", help="100 turns")
    parser.add_argument("--json", type=Path, default=RESULTS / "record_size.json")
    args = parser.parse_args()
    turns = 100 if args.quick else args.turns
    step = 20 if args.quick else 100
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    runs: dict[str, dict[str, Any]] = {}
    timings: dict[str, float] = {}
    for name, fn in (
        ("SimpleChatEngine + WindowBudgetMemory", lambda: llama_index_run(turns, "simple")),
        ("create_agent + WindowBudgetMiddleware", lambda: langchain_run(turns)),
        (
            "CondensePlusContextChatEngine + WindowBudgetMemory",
            lambda: llama_index_run(turns, "cpc"),
        ),
    ):
        t0 = time.process_time()
        runs[name] = fn()
        timings[name] = time.process_time() - t0
    print(f"# Record size over {turns} turns (tokens: {COUNTER})")
    for name, run in runs.items():
        print("\n".join(table(name, run, step)))
    print("\n".join(condense_table(runs["CondensePlusContextChatEngine + WindowBudgetMemory"], 50)))
    print("\nCPU seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "turns": turns,
                "counter": COUNTER,
                "python": sys.version.split()[0],
                "cpu_seconds": timings,
                "runs": runs,
            },
            indent=1,
        )
    )
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
