"""A turn's cost on real stores, and four workers sharing one conversation.

Run by hand:  python bench/bench_stores.py [--quick] [--only llama,agent,workers]

PostgreSQL and Redis are started on loopback for the run (the test suite's fixtures, from
the development install's packages), unless ``WINDOW_BUDGET_POSTGRES_URL`` /
``WINDOW_BUDGET_REDIS_URL`` point at servers you run (a scratch database: tables are
created and keys written). Peers run in the same process, on the same store and data;
every figure is a median, with the ratio to the peer beside it. Sections:

* ``llama``   -- a web server's request: a fresh memory over the store (its connection pool
  kept, as a server keeps it) and ``get()``, the history already in the store at 1k and
  10k messages, nothing summarized: ``WindowBudgetMemory`` vs ``ChatSummaryMemoryBuffer``,
  beside the floor of ``store.get_messages`` alone. Redis, PostgreSQL, SQLite.
* ``agent``   -- ``create_agent`` with ``SqliteSaver`` and ``PostgresSaver``, a thread seeded
  with 1k and 10k messages, one ``invoke`` per turn (the checkpointer loads and writes the
  thread each time), nothing summarized: the CPU time of this process each middleware adds
  to an invoke, ``WindowBudgetMiddleware`` vs ``SummarizationMiddleware``.
* ``workers`` -- spawned worker processes appending to one conversation (a new memory per
  request, a user message and a reply per turn, compactions every few turns), 1 and 4
  workers: messages per second, then the audit (archive + live == everything appended, in
  each worker's order; one digest covering exactly the archive).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import statistics
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
warnings.simplefilter("ignore")

from tests.stores.servers import postgres_server, redis_server  # noqa: E402
from tests.stores.workers import (  # noqa: E402
    audit,
    build_store,
    close_store,
    run_workers,
)

WINDOW = 50_000_000  # nothing is summarized: the turn's cost is load + gate


def row(label: str, ms: float, base: float | None = None, unit: str = "ms") -> None:
    ratio = f"  ({base / ms:5.2f}x the peer's speed)" if base else ""
    print(f"  {label:<58} {ms:9.2f} {unit}{ratio}")


def llama_history(n: int) -> list[Any]:
    from llama_index.core.base.llms.types import ChatMessage

    # Distinct facts in every message: no two messages share a cache entry.
    return [
        ChatMessage(
            role="user" if i % 2 == 0 else "assistant",
            content=f"message {i}: src/pkg/module_{i % 97}/file_{i}.py line {i * 7}; "
            f"ticket OPS-{1000 + i}. " + "noise " * 25,
        )
        for i in range(n)
    ]


@contextlib.contextmanager
def servers() -> Iterator[dict[str, str]]:
    with contextlib.ExitStack() as stack:
        pg = (
            os.environ.get("WINDOW_BUDGET_POSTGRES_URL")
            or stack.enter_context(postgres_server()).url
        )
        rd = os.environ.get("WINDOW_BUDGET_REDIS_URL") or stack.enter_context(redis_server()).url
        yield {"postgres": pg, "redis": rd}


def bench_llama(where: dict[str, str], sizes: list[int], runs: int) -> None:
    from llama_index.core.llms import MockLLM
    from llama_index.core.memory import ChatSummaryMemoryBuffer

    from llama_index.memory.window_budget import WindowBudgetMemory

    print(
        "\nLlamaIndex: a fresh memory + get() per request, the store's pool kept, "
        "nothing summarized"
    )
    for kind in ("redis", "postgres", "sqlite"):
        store = build_store(kind, where[kind])
        for n in sizes:
            ours_key, theirs_key = f"ours-{uuid.uuid4().hex}", f"theirs-{uuid.uuid4().hex}"
            history = llama_history(n)
            store.set_messages(ours_key, history)
            store.set_messages(theirs_key, history)
            llm = MockLLM(max_tokens=50)

            def floor(key: str = ours_key, store: Any = store) -> None:
                store.get_messages(key)

            def ours(key: str = ours_key, store: Any = store, llm: Any = llm) -> None:
                WindowBudgetMemory.from_defaults(
                    llm=llm, context_window=WINDOW, chat_store=store, chat_store_key=key
                ).get()

            def theirs(key: str = theirs_key, store: Any = store, llm: Any = llm) -> None:
                ChatSummaryMemoryBuffer.from_defaults(
                    llm=llm, token_limit=WINDOW, chat_store=store, chat_store_key=key
                ).get()

            variants = {"floor": floor, "ours": ours, "theirs": theirs}
            times = round_robin(variants, runs)
            assert len(store.get_messages(ours_key)) == n, "nothing may be summarized"
            print(f" {kind}, {n:,} messages")
            row("store.get_messages alone (the floor)", times["floor"])
            row("ChatSummaryMemoryBuffer", times["theirs"])
            row("WindowBudgetMemory", times["ours"], times["theirs"])
        close_store(store)


def round_robin(
    variants: dict[str, Callable[[], object]],
    runs: int,
    *,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Median ms of each variant, run in turn so load spikes land on all alike."""
    for fn in variants.values():
        fn()  # warm up: imports, the first connection
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(runs):
        for name, fn in variants.items():
            gc.collect()
            t = clock()
            fn()
            times[name].append((clock() - t) * 1000)
    return {name: statistics.median(v) for name, v in times.items()}


def _quiet_model() -> Any:
    from langchain_core.callbacks import CallbackManagerForLLMRun
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class Quiet(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "quiet"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(
            self,
            messages: list[Any],
            stop: list[str] | None = None,
            run_manager: CallbackManagerForLLMRun | None = None,
            **kwargs: Any,
        ) -> ChatResult:
            return ChatResult(generations=[ChatGeneration(message=AIMessage("ok"))])

    return Quiet()


@contextlib.contextmanager
def checkpointer(kind: str, where: dict[str, str], tmp: Path) -> Iterator[Any]:
    if kind == "sqlite":
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(tmp / f"checkpoints-{uuid.uuid4().hex}.db", check_same_thread=False)
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(where["postgres"]) as saver:
            saver.setup()
            yield saver


def bench_agent(where: dict[str, str], sizes: list[int], turns: int, tmp: Path) -> None:
    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_window_budget import WindowBudgetMiddleware
    from window_budget import BudgetPolicy

    print("\ncreate_agent + a database checkpointer, one invoke per turn, nothing summarized")
    for kind in ("sqlite", "postgres"):
        for n in sizes:
            model = _quiet_model()
            seed = [
                HumanMessage(
                    f"question {i}: deploy services/api_{i}.py with TAG=v{i}; " + "noise " * 25,
                    id=f"h{i}",
                )
                if i % 2 == 0
                else AIMessage(f"answer {i}: deployed v{i}. " + "noise " * 25, id=f"a{i}")
                for i in range(n)
            ]
            variants: dict[str, list[Any]] = {
                "none": [],
                # The window's share, not the default's prompt ceiling: nothing compacts.
                "ours": [
                    WindowBudgetMiddleware(
                        model,
                        context_window=WINDOW,
                        policy=BudgetPolicy.for_window(WINDOW, cache_aware=False),
                    )
                ],
                "theirs": [
                    SummarizationMiddleware(
                        model, trigger=("tokens", WINDOW), keep=("messages", 20)
                    )
                ],
            }
            with checkpointer(kind, where, tmp) as saver:
                calls: dict[str, Callable[[], object]] = {}
                for name, middleware in variants.items():
                    agent = create_agent(model, tools=[], middleware=middleware, checkpointer=saver)
                    config = {"configurable": {"thread_id": f"{name}-{uuid.uuid4().hex}"}}
                    agent.update_state(config, {"messages": seed})
                    turn = iter(range(10**9))
                    calls[name] = lambda a=agent, c=config, t=turn: a.invoke(
                        {"messages": [HumanMessage(f"turn {next(t)}")]}, c
                    )
                # CPU time of this process: what a middleware adds is computed here, and the
                # database server's share (the same for every variant) only adds noise.
                times = round_robin(calls, turns, clock=time.process_time)
            base = times["none"]
            print(f" {kind}, {n:,} messages (invoke without middleware: {base:.1f} ms of CPU)")
            ours, theirs = times["ours"] - base, times["theirs"] - base
            print(f"  {'added by WindowBudgetMiddleware':<58} {ours:+9.2f} ms")
            print(f"  {'added by SummarizationMiddleware':<58} {theirs:+9.2f} ms")


def bench_workers(where: dict[str, str], turns: int, tmp: Path) -> None:
    import multiprocessing

    print(
        "\nWorkers sharing one conversation (spawned processes, a memory per request, "
        "compactions on)"
    )
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(4) as pool:
        for kind in ("redis", "postgres", "sqlite"):
            place = where.get(kind) or str(tmp / f"workers-{uuid.uuid4().hex}.db")
            close_store(build_store(kind, place))
            for workers in (1, 4):
                key = f"workers-{uuid.uuid4().hex}"
                each = turns * 4 // workers  # the same number of messages in all
                compactions, wall = run_workers(
                    kind,
                    place,
                    key,
                    workers=workers,
                    turns=each,
                    window=2_000,
                    pool=pool,
                    manager=manager,
                )
                store = build_store(kind, place)
                counts = audit(store, key, workers=workers, turns=each)
                close_store(store)
                total = workers * each * 2
                print(
                    f"  {kind:<9} {workers} worker(s): {total} messages in {wall:6.2f} s = "
                    f"{total / wall:7.1f} messages/s; {compactions} compactions; audit ok "
                    f"(archive {counts['archived']}, live {counts['live']}, one digest)"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs and turns")
    parser.add_argument("--only", default="llama,agent,workers")
    args = parser.parse_args()
    only = set(args.only.split(","))
    runs = 5 if args.quick else 15
    import tempfile

    with servers() as where, tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        where = {**where, "sqlite": str(tmp / "llama.db")}
        if "llama" in only:
            bench_llama(where, [1_000, 10_000], runs)
        if "agent" in only:
            bench_agent(where, [1_000, 10_000], 3 if args.quick else 11, tmp)
        if "workers" in only:
            bench_workers(
                {k: v for k, v in where.items() if k != "sqlite"}, 15 if args.quick else 40, tmp
            )


if __name__ == "__main__":
    main()
