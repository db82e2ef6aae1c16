"""The cost of a turn where users really run: equal messages as *new objects* every turn.

Run by hand:  python bench/bench_cold_turns.py [--quick] [--only agent,condense,...]

Peers run in the same process, on the same data; every figure is a median of several
runs, with the ratio to the peer beside it. Sections:

* ``agent``     -- ``create_agent`` + ``InMemorySaver``, a thread seeded with 2k and 10k
  messages, one ``invoke`` per turn (the checkpointer deserializes the thread each time):
  no middleware vs ``WindowBudgetMiddleware`` vs ``SummarizationMiddleware``, nothing
  summarized. Reported: the cost each middleware *adds* to an invoke (a difference of
  medians, noisy beside the invoke's own cost) and the CPU time spent inside its hooks.
* ``condense``  -- ``condense_messages`` at 10k messages, cold (new objects each turn, as
  read from a store), a new engine's first sight of a thread another engine converted,
  one engine whose other thread took a turn in between, and warm (the same list again),
  against ``count_tokens_approximately`` and ``trim_messages``; with two floors: one bare
  pass summing ``len(content)`` over the messages, and one C-level comparison of every
  message's fields with the turn before's (what recognising new objects *exactly* cannot
  go below).
* ``llama``     -- a fresh LlamaIndex memory + ``get()`` per request over a store read from
  disk, at 1k and 10k messages: ``WindowBudgetMemory`` (archive in its own store) vs
  ``ChatSummaryMemoryBuffer``.
* ``lcel``      -- an LCEL chain over a stored, unabridged history for 50 turns: summary
  calls made, against one per compaction.
* ``linear``    -- ``window-budget inspect`` of a 100k-message transcript, and one message
  with 20k parallel tool calls gated.

``--transcripts DIR`` (or ``WINDOW_BUDGET_TRANSCRIPTS``) adds the ``inspect`` timing for
every transcript file in DIR (real public transcripts; nothing is stored with the repo).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

warnings.simplefilter("ignore")


def median_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def row(label: str, ms: float, base: float | None = None) -> None:
    ratio = (
        ""
        if not base
        else f"  ({base / ms:5.1f}x faster)"
        if base >= ms
        else f"  ({ms / base:5.1f}x slower)"
    )
    print(f"  {label:<52} {ms:9.2f} ms{ratio}")


# ------------------------------------------------------------------- LangChain


def lc_transcript(n: int, thread: str = "") -> list[Any]:
    """``n`` messages of a tool-using agent; ``thread`` prefixes every id (ids are unique
    per thread in a real checkpointer: LangGraph gives each message a UUID)."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    out: list[Any] = []
    i = 0
    while len(out) < n:
        out.append(
            HumanMessage(f"step {i}: please look at module_{i}.py " + "q" * 120, id=f"{thread}h{i}")
        )
        out.append(
            AIMessage(
                "checking",
                id=f"{thread}a{i}",
                tool_calls=[
                    {
                        "name": "read_file",
                        "args": {"path": f"module_{i}.py"},
                        "id": f"c{i}",
                        "type": "tool_call",
                    }
                ],
            )
        )
        out.append(
            ToolMessage(
                f"contents of module_{i}.py\n" + "x = 1\n" * 60,
                tool_call_id=f"c{i}",
                id=f"{thread}t{i}",
            )
        )
        out.append(
            AIMessage(
                f"module_{i}.py looks fine " + "a" * 80,
                id=f"{thread}s{i}",
                usage_metadata={
                    "input_tokens": 100 * i + 50,
                    "output_tokens": 20,
                    "total_tokens": 100 * i + 70,
                },
            )
        )
        i += 1
    return out[:n]


def _quiet_model() -> Any:
    from langchain_core.callbacks import CallbackManagerForLLMRun
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class Quiet(BaseChatModel):
        """Answers at once; reports no usage, so every gate counts every message."""

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


def _timed(cls: type) -> type:
    """``cls``, recording the CPU time spent inside its hooks (the model call excluded).

    The cost a middleware adds to an invoke is small beside the invoke itself (the
    checkpointer deserializes the whole thread), so the difference of two invokes' medians
    drowns in the machine's noise; the time inside the hooks does not. Thread time: LangGraph
    writes checkpoints from a background thread meanwhile, which process time would count.
    """
    from langchain.agents.middleware import AgentMiddleware

    class Timed(cls):  # type: ignore[valid-type,misc]
        hook_ms = 0.0

        def before_model(self, state: Any, runtime: Any) -> Any:
            t = time.thread_time()
            try:
                return super().before_model(state, runtime)
            finally:
                self.hook_ms += (time.thread_time() - t) * 1000

    if cls.wrap_model_call is not AgentMiddleware.wrap_model_call:  # type: ignore[attr-defined]

        def wrap_model_call(self: Any, request: Any, handler: Any) -> Any:
            inner = 0.0

            def timed_handler(req: Any) -> Any:
                nonlocal inner
                s = time.thread_time()
                try:
                    return handler(req)
                finally:
                    inner += time.thread_time() - s

            t = time.thread_time()
            try:
                return cls.wrap_model_call(self, request, timed_handler)  # type: ignore[attr-defined]
            finally:
                self.hook_ms += (time.thread_time() - t - inner) * 1000

        Timed.wrap_model_call = wrap_model_call  # type: ignore[method-assign]
    Timed.__name__ = Timed.__qualname__ = cls.__name__
    return Timed


def bench_agent(sizes: list[int], turns: int) -> None:
    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_window_budget import WindowBudgetMiddleware

    print("\ncreate_agent + InMemorySaver, one invoke per turn, nothing summarized")
    for n in sizes:
        model = _quiet_model()
        seed = lc_transcript(n)
        window = 50_000_000
        variants: dict[str, list[Any]] = {
            "no middleware": [],
            "WindowBudgetMiddleware": [
                _timed(WindowBudgetMiddleware)(model, context_window=window)
            ],
            "SummarizationMiddleware": [
                _timed(SummarizationMiddleware)(
                    model, trigger=("tokens", window), keep=("messages", 20)
                )
            ],
            # One middleware serving three users whose turns interleave (a web server):
            # the two other threads run, untimed, before each timed turn of the first.
            SHARED: [_timed(WindowBudgetMiddleware)(model, context_window=window)],
        }
        agents: dict[str, tuple[Any, dict[str, Any]]] = {}
        others: list[tuple[Any, dict[str, Any]]] = []
        for name, middleware in variants.items():
            agent = create_agent(
                model, tools=[], middleware=middleware, checkpointer=InMemorySaver()
            )
            config = {"configurable": {"thread_id": f"{name}-{n}"}}
            agent.update_state(config, {"messages": seed})
            agent.invoke({"messages": [HumanMessage("warm up")]}, config)
            agents[name] = (agent, config)
            if name == SHARED:
                for k in (1, 2):
                    other = {"configurable": {"thread_id": f"user{k}-{n}"}}
                    agent.update_state(other, {"messages": lc_transcript(n, thread=f"u{k}-")})
                    agent.invoke({"messages": [HumanMessage("warm up")]}, other)
                    others.append((agent, other))
        # Round robin, a collection before each call: a load spike or a garbage collection
        # lands on every variant alike instead of on whichever ran at that moment.
        times: dict[str, list[float]] = {name: [] for name in agents}
        hooks: dict[str, list[float]] = {name: [] for name in agents}
        for turn in range(turns):
            for name, (agent, config) in agents.items():
                if name == SHARED:
                    for other_agent, other in others:
                        other_agent.invoke({"messages": [HumanMessage(f"turn {turn}")]}, other)
                gc.collect()
                # CPU time of this process: the machine's other load does not count.
                t = time.process_time()
                agent.invoke({"messages": [HumanMessage(f"turn {turn}")]}, config)
                times[name].append((time.process_time() - t) * 1000)
                # Again with the collector paused: a collection the checkpointer's new
                # objects trigger lands in whichever code runs then; the hooks' own work
                # is what is left.
                if name == SHARED:
                    for other_agent, other in others:
                        other_agent.invoke({"messages": [HumanMessage(f"turn {turn}b")]}, other)
                for m in variants[name]:
                    m.hook_ms = 0.0
                gc.collect()
                gc.disable()
                try:
                    agent.invoke({"messages": [HumanMessage(f"turn {turn}b")]}, config)
                finally:
                    gc.enable()
                hooks[name].append(sum(m.hook_ms for m in variants[name]))
        results = {name: statistics.median(v) for name, v in times.items()}
        inside = {name: statistics.median(v) for name, v in hooks.items()}
        base = results["no middleware"]
        print(f" {n:,} messages (invoke without middleware: {base:.1f} ms of CPU)")
        ours = results["WindowBudgetMiddleware"] - base
        theirs = results["SummarizationMiddleware"] - base
        print(f"  {'invoke, added by WindowBudgetMiddleware':<52} {ours:+9.2f} ms")
        print(f"  {'invoke, added by SummarizationMiddleware':<52} {theirs:+9.2f} ms")
        if theirs > 0:
            print(f"  {'  ours / theirs (target <= 0.33)':<52} {ours / theirs:9.2f}")
        ours, theirs = inside["WindowBudgetMiddleware"], inside["SummarizationMiddleware"]
        print(f"  {'inside the hooks (collector paused): ours':<52} {ours:9.2f} ms")
        print(f"  {'inside the hooks (collector paused): theirs':<52} {theirs:9.2f} ms")
        if theirs > 0:
            print(f"  {'  ours / theirs (target <= 0.33)':<52} {ours / theirs:9.2f}")
        shared = inside[SHARED]
        print(f"  {'inside the hooks: ours, three threads taking turns':<52} {shared:9.2f} ms")
        if theirs > 0:
            print(f"  {'  ours / theirs':<52} {shared / theirs:9.2f}")


SHARED = "WindowBudgetMiddleware, 3 threads interleaved"


def bench_condense(n: int, runs: int) -> None:
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    from langchain_window_budget import LangChainCondenser, condense_messages
    from langchain_window_budget._identity import message_fields

    print(f"\ncondense_messages at {n:,} messages (under budget: the common turn)")
    history = lc_transcript(n)
    # New objects as a LangGraph checkpointer makes them (its serializer's round trip): every
    # string is new too, so comparing them reads their bytes. (``messages_from_dict`` of one
    # dumped list would share the strings and flatter every exact comparison.)
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    serde = JsonPlusSerializer()
    dumped = serde.dumps_typed(history)

    def messages_from_dict(blob: Any) -> list[Any]:
        return list(serde.loads_typed(blob))

    window = 50_000_000
    warm_window = window - 1  # another engine: the one that only ever sees ``history``
    condense_messages(messages_from_dict(dumped), context_window=window)  # seen once
    condense_messages(history, context_window=warm_window)

    def cold_ours() -> None:
        condense_messages(copy, context_window=window)

    # One engine serving two threads that take turns (one middleware, many users): the
    # other thread ran in between, so this one is not the engine's previous list.
    shared = LangChainCondenser(context_window=window)
    other = messages_from_dict(serde.dumps_typed(lc_transcript(n // 2, thread="other-")))
    shared.run(messages_from_dict(dumped))

    def other_thread_between() -> None:
        shared.run(copy)

    def first_sight() -> None:
        # A new engine (a new request's, say) on a thread another engine has converted.
        LangChainCondenser(context_window=window).run(copy)

    def exact_floor() -> None:
        # What recognising new objects exactly cannot go below: one C-level comparison of
        # every message's class and field dict with those of the turn before.
        mine = message_fields(copy)
        if mine is None or mine[0] != seen[0] or mine[1] != seen[1]:
            raise RuntimeError("the reloaded thread should equal the one before")

    seen = message_fields(messages_from_dict(dumped))
    variants: dict[str, Callable[[], object]] = {
        "floor": lambda: sum(len(m.content) for m in history),
        "exact": exact_floor,
        "approx": lambda: count_tokens_approximately(history),
        "trim": lambda: trim_messages(
            history, max_tokens=window, strategy="last", token_counter="approximate"
        ),
        "cold": cold_ours,
        "first": first_sight,
        "turns": other_thread_between,
        "warm": lambda: condense_messages(history, context_window=warm_window),
    }
    # Round robin with a collection before each call, CPU time of this process: a load
    # spike or a garbage collection lands on every variant alike.
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(runs):
        for name, fn in variants.items():
            if name in ("exact", "cold", "first", "turns"):
                copy = messages_from_dict(dumped)  # new objects, built outside the timing
            if name == "turns":
                shared.run(other)  # the other thread's turn, outside the timing
            gc.collect()
            t = time.process_time()
            fn()
            times[name].append((time.process_time() - t) * 1000)
    ms = {name: statistics.median(v) for name, v in times.items()}
    fastest = min(ms["approx"], ms["trim"])
    print("  (CPU time, medians)")
    row("floor: one pass summing len(content)", ms["floor"])
    row("count_tokens_approximately", ms["approx"])
    row("trim_messages (approximate counter)", ms["trim"])
    row("floor: exact comparison of every field (C-level)", ms["exact"])
    row("condense_messages, cold (new objects), vs approx", ms["cold"], ms["approx"])
    row("new engine, first sight of a known thread, vs approx", ms["first"], ms["approx"])
    row("one engine, another thread's turn between, vs approx", ms["turns"], ms["approx"])
    row("condense_messages, warm (same list), vs fastest peer", ms["warm"], fastest)


def bench_lcel(turns: int) -> None:
    from langchain_core.messages import (
        AIMessage,
        HumanMessage,
        messages_from_dict,
        messages_to_dict,
    )

    from langchain_window_budget import condense_messages
    from window_budget import BudgetPolicy

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.langchain.conftest import RecordingChatModel

    print(f"\nLCEL transformer over a stored, unabridged history, {turns} turns")
    model = RecordingChatModel(sizes=[], summary_calls=[])
    transformer = condense_messages(
        model=model, context_window=4_000, policy=BudgetPolicy(keep_recent=1_000, reserve_tokens=0)
    )
    stored: list[Any] = []
    digests: set[str] = set()
    for i in range(turns):
        stored.append(HumanMessage(f"question {i}: " + "q" * 600, id=f"h{i}"))
        stored.append(AIMessage(f"answer {i}: " + "a" * 600, id=f"a{i}"))
        out = transformer.invoke(messages_from_dict(messages_to_dict(stored)))
        if out[0].id and str(out[0].id).startswith("window-budget-digest"):
            digests.add(str(out[0].id))
    print(f"  compactions (distinct digests written)      {len(digests):6d}")
    print(f"  summary calls made                          {len(model.summary_calls):6d}")
    print("  (a long head may take more than one call: it is summarized in chunks)")


# ------------------------------------------------------------------- LlamaIndex


def bench_llama(sizes: list[int], runs: int) -> None:
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.llms import MockLLM
    from llama_index.core.memory import ChatSummaryMemoryBuffer
    from llama_index.core.storage.chat_store import SimpleChatStore

    from llama_index.memory.window_budget import WindowBudgetMemory

    def save(store: SimpleChatStore, path: Path) -> None:
        path.write_text(
            json.dumps(
                {
                    k: [m.model_dump(mode="json") for m in store.get_messages(k)]
                    for k in store.get_keys()
                }
            )
        )

    def load(path: Path) -> SimpleChatStore:
        store = SimpleChatStore()
        for key, msgs in json.loads(path.read_text()).items():
            store.set_messages(key, [ChatMessage.model_validate(m) for m in msgs])
        return store

    print("\nLlamaIndex: a fresh memory + get() per request over a store read from disk")
    window = 8_000
    tmp = Path(tempfile.mkdtemp())
    for n in sizes:
        history = [
            ChatMessage(
                role="user" if i % 2 == 0 else "assistant", content=f"message {i} " + "word " * 60
            )
            for i in range(n)
        ]
        ours_path, theirs_path = tmp / f"ours-{n}.json", tmp / f"theirs-{n}.json"
        live, archive = SimpleChatStore(), SimpleChatStore()
        WindowBudgetMemory.from_defaults(
            llm=MockLLM(max_tokens=50),
            context_window=window,
            chat_store=live,
            archive_store=archive,
            chat_history=history,
        )
        save(live, ours_path)
        theirs_store = SimpleChatStore()
        theirs_store.set_messages("chat_history", history)
        save(theirs_store, theirs_path)

        def ours(path: Path = ours_path, archive: SimpleChatStore = archive) -> None:
            memory = WindowBudgetMemory.from_defaults(
                llm=MockLLM(max_tokens=50),
                context_window=window,
                chat_store=load(path),
                archive_store=archive,
            )
            memory.get()

        def theirs(path: Path = theirs_path) -> None:
            memory = ChatSummaryMemoryBuffer.from_defaults(
                llm=MockLLM(max_tokens=50), token_limit=window, chat_store=load(path)
            )
            memory.get()

        ours()
        theirs()
        a, b = median_ms(ours, runs), median_ms(theirs, runs)
        print(
            f" {n:,} messages (live store: {len(live.get_messages('chat_history'))} "
            f"messages; archive in its own store)"
        )
        row("ChatSummaryMemoryBuffer", b)
        row("WindowBudgetMemory, vs ChatSummaryMemoryBuffer", a, b)


# ------------------------------------------------------------------- linear paths


def bench_linear(transcripts: Path | None) -> None:
    from window_budget import (
        AssistantMessage,
        Model,
        ToolCallBlock,
        ToolResultMessage,
        UserMessage,
        create_condenser,
    )

    print("\nLinear paths")
    tmp = Path(tempfile.mkdtemp()) / "big100k.json"
    msgs = []
    for i in range(50_000):
        msgs.append({"role": "user", "content": f"question {i} " + "word " * 8})
        msgs.append({"role": "assistant", "content": f"answer {i} " + "text " * 8})
    tmp.write_text(json.dumps({"messages": msgs}))
    files = [tmp]
    if transcripts is not None:
        files += sorted(p for p in transcripts.iterdir() if p.is_file())
    for path in files:
        t = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "window_budget", "inspect", str(path), "--window", "2000000"],
            capture_output=True,
            text=True,
            check=False,
        )
        took = time.perf_counter() - t
        status = "" if done.returncode == 0 else f"  (exit {done.returncode})"
        print(f"  inspect {path.name:<44} {took:9.2f} s{status}")
    calls = tuple(ToolCallBlock(f"c{i}", "lookup", {"q": i}) for i in range(20_000))
    par = [
        UserMessage("go"),
        AssistantMessage(calls),
        *(ToolResultMessage(f"c{i}", "lookup", f"r{i}") for i in range(20_000)),
        UserMessage("next"),
    ]
    condenser = create_condenser(model=Model("m", 2_000_000))
    row(
        "gate one message with 20k parallel tool calls",
        median_ms(lambda: create_condenser(model=Model("m", 2_000_000)).run_sync(par), 3),
    )
    del condenser


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--only", default="agent,condense,llama,lcel,linear")
    parser.add_argument(
        "--transcripts", type=Path, default=os.environ.get("WINDOW_BUDGET_TRANSCRIPTS") or None
    )
    args = parser.parse_args()
    runs = 5 if args.quick else 15
    only = set(args.only.split(","))
    if "agent" in only:
        bench_agent([2_000, 10_000], 5 if args.quick else 15)
    if "condense" in only:
        bench_condense(10_000, runs)
    if "llama" in only:
        bench_llama([1_000, 10_000], runs)
    if "lcel" in only:
        bench_lcel(50)
    if "linear" in only:
        bench_linear(args.transcripts)


if __name__ == "__main__":
    main()
