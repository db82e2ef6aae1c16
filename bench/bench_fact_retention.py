"""Does the session still know what matters after compacting? Facts planted, facts found.

Generated sessions plant 67 facts of every kind the fact ledger tracks — the objective,
the user's constraints and later asks, files created / edited / deleted under long
absolute paths of one workspace root, informative commands among dozens of
``git status`` / ``ls`` / ``cat``, errors (most later resolved) buried in noisy output,
decisions stated in prose among the agent's musings, identifiers, open plan items — in
heads of 50k to 250k tokens, with system-injected user turns (interruptions, task
notifications, command wrappers) as noise. A weak digest scores low here: one that lists
every ``git status``, picks sentences from musings or cuts long paths in the middle.

Reported, with medians over seeds:

1. retention per kind after one compaction at 2,000 digest tokens (network-free digest),
   tokens used, and whether any path was cut in the middle;
2. survival after 5 and 10 successive compactions, new material arriving between them
   (of the first generation's facts and of all facts);
3. the audit, with a scripted model whose digest omits about half of the facts and
   rewrites (drops a third of) the carried digest each generation: found / pinned, and
   retention with and without the pins, after 1 and 5 compactions;
4. masking: summary calls over growing sessions — an agent with large tool outputs,
   one with small outputs, a chat with no tools — masking off and on (K, size);
5. a peer in the same run: LangChain's ``SummarizationMiddleware`` (token ``keep``) with a
   scripted model that writes the same half-omitting digest — how many first-generation
   facts survive its successive summaries;
6. with ``--real DIR``: real Claude Code sessions (native ``*.jsonl``, Markdown exports or
   console copies; ``bench/data/claude_code/``) whose compaction the agent's own model
   summarized: the share of the file paths, identifiers, commands and errors that summary
   kept (and that occur verbatim in the folded messages) found in our digest plus kept tail,
   at a digest budget of the summary's size, and with digest and tail together within it
   (``retention_real.py``).

The generator and the scoring live in ``retention_material.py``.

Run:  python bench/bench_fact_retention.py [--seeds 3] [--real DIR] [--counter tiktoken]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from retention_material import (
    KINDS,
    Planted,
    chat_material,
    cut_paths,
    found,
    generation_material,
    med,
    pct,
    retention,
    session,
    tail,
    text_of,
)
from retention_real import real_sessions

from window_budget import (
    AssistantMessage,
    BudgetPolicy,
    Model,
    TextBlock,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    create_condenser,
    estimate_tokens,
)
from window_budget.budget import count_text, resolve_counter
from window_budget.messages import message_text
from window_budget.pipeline.summarize import ledger_of
from window_budget.testing import ScriptedCompleter

# ------------------------------------------------------------------ scenarios


def one_compaction(seeds: int, counter: Any) -> None:
    print("\n1. One compaction at 2,000 digest tokens, no model (network-free digest)")
    for head in (50_000, 100_000, 250_000):
        rows: list[dict[str, float]] = []
        used, cuts, times = [], [], []
        for seed in range(seeds):
            msgs, facts = session(seed, head, generations=2)
            head_tokens = estimate_tokens(msgs)
            msgs = msgs + tail(seed, 6000)
            condenser = create_condenser(
                model=Model("m", 400_000),
                counter=counter,
                policy=BudgetPolicy(keep_recent=5000, digest_max_tokens=2000),
            )
            start = time.perf_counter()
            result = condenser.run_sync(msgs, force=True)
            times.append(time.perf_counter() - start)
            assert result.summary is not None
            digest = result.summary.text
            rows.append(retention(facts, digest))
            used.append(counter.count(digest) if counter else count_text(digest))
            cuts.append(cut_paths(digest))
        n_facts = len(facts)
        per_kind = "  ".join(f"{k} {pct(med([r.get(k, 0) for r in rows]))}" for k in KINDS)
        print(
            f"   head {head_tokens // 1000}k tokens, {n_facts} facts: overall "
            f"{pct(med([r['overall'] for r in rows]))}, min kind "
            f"{pct(min(med([r.get(k, 0) for r in rows]) for k in KINDS))}; digest "
            f"{med(used):.0f} tokens; paths cut {max(cuts)}; run {med(times) * 1000:.0f} ms"
        )
        print(f"      {per_kind}")


def successive(
    seeds: int, counter: Any, generations: int, digest_tokens: int = 2000
) -> dict[str, float]:
    """Compact after every generation; check all facts planted so far."""
    first_rows, all_rows, kinds0, current_rows, ledger_rows = [], [], [], [], []
    for seed in range(seeds):
        history: list = []
        facts: list[Planted] = []
        for g in range(generations):
            m, f = generation_material(seed, g, 30)
            history = history + m + tail(seed * 7 + g, 1500)
            facts += f
            condenser = create_condenser(
                model=Model("m", 400_000),
                counter=counter,
                policy=BudgetPolicy(keep_recent=1500, digest_max_tokens=digest_tokens),
            )
            history = list(condenser.run_sync(history, force=True).messages)
        text = text_of(history)
        first = [f for f in facts if f.generation == 0]
        first_rows.append(retention(first, text)["overall"])
        all_rows.append(retention(facts, text)["overall"])
        kinds0.append(retention(first, text))
        # A later plan supersedes the earlier ones: their steps are no longer "open".
        current = [f for f in facts if f.kind != "plan" or f.generation == generations - 1]
        current_rows.append(retention(current, text)["overall"])
        carried = ledger_of(history[0])
        assert carried is not None
        ledger_text = "\n".join(f.text for f in carried.facts)
        ledger_rows.append(retention(facts, ledger_text)["overall"])
    core = {k: med([r.get(k, 0) for r in kinds0]) for k in ("objective", "constraint", "file")}
    errors_open = []
    return {
        "first": med(first_rows),
        "all": med(all_rows),
        "current": med(current_rows),
        "ledger": med(ledger_rows),
        **core,
        "open_errors": med(errors_open) if errors_open else float("nan"),
    }


def open_error_survival(seeds: int, counter: Any, generations: int) -> float:
    rows = []
    for seed in range(seeds):
        history: list = []
        opened: list[Planted] = []
        for g in range(generations):
            m, f = generation_material(seed, g, 30)
            history = history + m + tail(seed * 7 + g, 1500)
            if g % 2 == 1:  # the third error of odd generations stays open
                opened += [x for x in f if x.kind == "error" and "No module named" in x.probe]
            condenser = create_condenser(
                model=Model("m", 400_000), counter=counter, policy=BudgetPolicy(keep_recent=1500)
            )
            history = list(condenser.run_sync(history, force=True).messages)
        text = text_of(history)
        rows.append(sum(found(f, text) for f in opened) / max(1, len(opened)))
    return med(rows)


def forgetful_model(
    facts_of: Callable[[], list[Planted]],
    rng: random.Random,
) -> Callable[[Any], str]:
    """A scripted model: keeps the carried digest's lines at 2/3, and half of the new facts."""

    def reply(context: Any) -> str:
        prompt = context.messages[-1].content
        carried = ""
        if "<carried-digest>" in prompt:
            carried = prompt.split("<carried-digest>\n", 1)[1].split("\n</carried-digest>", 1)[0]
        kept = [ln for ln in carried.splitlines() if ln.startswith("#") or rng.random() < 0.67]
        scroll = prompt.split("<scrollback>", 1)[1]
        new = [f for f in facts_of() if f.probe.lower() in scroll.lower() and rng.random() < 0.5]
        body = "\n".join(kept) if kept else "# Objective\ncontinue the migration"
        return body + "\n# Carryover\n" + "\n".join(f"- {f.probe}" for f in new)

    return reply


def _stays_open(fact: Planted) -> bool:
    """The third error of odd generations is never resolved (see ``generation_material``)."""
    return fact.kind == "error" and "No module named" in fact.probe and fact.generation % 2 == 1


def audit(seeds: int, counter: Any) -> None:
    print("\n3. The audit, scripted model omitting ~half of the facts (drops 1/3 of the carried)")
    for generations in (1, 5):
        pinned_rows, model_rows, final_rows, found_rows, appended = [], [], [], [], []
        floor_rows: list[float] = []
        tokens: list[int] = []
        for seed in range(seeds):
            rng = random.Random(seed)
            facts: list[Planted] = []
            fake = ScriptedCompleter([forgetful_model(facts.copy, rng)] * 50)
            condenser = create_condenser(
                model=Model("m", 400_000),
                counter=counter,
                complete_sync=fake.sync,
                summarizer_model=Model("s", 400_000),
                policy=BudgetPolicy(keep_recent=1500),
            )
            history: list = []
            for g in range(generations):
                m, f = generation_material(seed, g, 30)
                history = history + m + tail(seed * 7 + g, 1500)
                facts += f
                result = condenser.run_sync(history, force=True)
                history = list(result.messages)
            assert result.summary is not None
            assert result.summary.audit is not None
            a = result.summary.audit
            found_rows.append(a.found / max(1, a.checked))
            appended.append(a.appended)
            text = result.summary.text
            model_text = text.rsplit("\n\n# Pinned facts", 1)[0]
            model_rows.append(retention(facts, model_text)["overall"])
            final_rows.append(retention(facts, text)["overall"])
            key = [f for f in facts if f.kind in ("objective", "constraint", "file", "error")]
            pinned_rows.append(retention(key, text)["overall"])
            floor = [f for f in key if f.kind != "error" or _stays_open(f)]
            floor_rows.append(retention(floor, text)["overall"])
            tokens.append(count_text(text, counter))
        print(
            f"   after {generations} compaction(s): key facts found in the model's text "
            f"{pct(med(found_rows))}, pinned {med(appended):.0f}; all facts in the model's "
            f"text {pct(med(model_rows))} -> with pins {pct(med(final_rows))}; objective, "
            f"constraints, edited files and open errors with pins {pct(med(floor_rows))} "
            f"(errors resolved since included: {pct(med(pinned_rows))}); digest "
            f"{med(tokens):.0f} tokens"
        )


def masking(seeds: int, counter: Any) -> None:
    print(
        "\n4. Masking: summary calls over growing sessions (128k window, 8 generations, a "
        "model bound)"
    )
    candidate = {"mask_keep_outputs": 3, "mask_min_chars": 2000}
    shapes: list[
        tuple[
            str, Callable[[int, int], tuple[list, list[Planted]]], list[tuple[str, dict[str, Any]]]
        ]
    ] = [
        (
            "agent, large tool outputs",
            lambda seed, g: generation_material(seed, g, 400),
            [
                ("off", {"mask_keep_outputs": None}),
                ("K=3, >2,000 chars", candidate),
                ("K=10, >2,000 chars", {"mask_keep_outputs": 10, "mask_min_chars": 2000}),
                ("K=3, >8,000 chars", {"mask_keep_outputs": 3, "mask_min_chars": 8000}),
            ],
        ),
        (
            "agent, small tool outputs",
            lambda seed, g: generation_material(seed, g, 12),
            [("off", {"mask_keep_outputs": None}), ("K=3, >2,000 chars", candidate)],
        ),
        (
            "chat only, no tools",
            lambda seed, g: chat_material(seed, g, 700),
            [("off", {"mask_keep_outputs": None}), ("K=3, >2,000 chars", candidate)],
        ),
    ]
    for shape, material, configs in shapes:
        print(f"   {shape}:")
        for label, extra in configs:
            calls, masked, ret, ends = [], [], [], []
            for seed in range(seeds):
                rng = random.Random(seed)
                facts: list[Planted] = []
                fake = ScriptedCompleter([forgetful_model(facts.copy, rng)] * 400)
                condenser = create_condenser(
                    model=Model("m", 128_000),
                    counter=counter,
                    complete_sync=fake.sync,
                    policy=BudgetPolicy(**extra),
                )
                history: list = []
                n_masked = 0
                for g in range(8 if shape != "agent, small tool outputs" else 24):
                    m, f = material(seed, g)
                    facts += f
                    for msg in m:  # one message at a time, as an agent loop would
                        history = [*history, msg]
                        result = condenser.run_sync(history)
                        n_masked += result.reason == "masked"
                        history = list(result.messages)
                calls.append(len(fake.calls))
                masked.append(n_masked)
                ret.append(retention(facts, text_of(history))["overall"])
                ends.append(estimate_tokens(history, counter))
            print(
                f"     masking {label:<20} summary calls {med(calls):4.0f}, masking passes "
                f"{med(masked):4.0f}, facts held at the end {pct(med(ret))}, transcript "
                f"{med(ends) / 1000:.0f}k tokens"
            )


def peer_langchain(seeds: int) -> None:
    print("\n5. Peer: LangChain SummarizationMiddleware (trigger 60k tokens, keep 6k tokens)")
    try:
        from langchain.agents.middleware import SummarizationMiddleware
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    except ImportError as exc:
        print(f"   skipped: {exc}")
        return
    rows = []
    for seed in range(seeds):
        rng = random.Random(seed)
        facts: list[Planted] = []
        model = _peer_model(facts, rng)
        middleware = SummarizationMiddleware(
            model=model, trigger=("tokens", 60_000), keep=("tokens", 6_000)
        )
        history: list = []
        for g in range(5):
            m, f = generation_material(seed, g, 150)
            facts += f
            history += _to_langchain(m, HumanMessage, AIMessage, ToolMessage)
            update = middleware.before_model({"messages": history}, None)  # type: ignore[arg-type]
            if update:
                history = [x for x in update["messages"] if type(x).__name__ != "RemoveMessage"]
        text = "\n".join(str(x.content) for x in history)
        first = [f for f in facts if f.generation == 0]
        ours = _ours_with_half_model(seed)
        rows.append(
            (retention(first, text)["overall"], retention(facts, text)["overall"], ours[0], ours[1])
        )
    print(
        f"   after 5 generations, the same model keeping half of what it reads: "
        f"SummarizationMiddleware first-generation facts {pct(med([r[0] for r in rows]))}, "
        f"all {pct(med([r[1] for r in rows]))}; window-budget (same trigger and keep) "
        f"first-generation {pct(med([r[2] for r in rows]))}, "
        f"all {pct(med([r[3] for r in rows]))}"
    )


def _half_summary(facts: list[Planted], rng: random.Random) -> Callable[[Any], str]:
    def reply(context: Any) -> str:
        prompt = context.messages[-1].content.lower()
        kept = [f for f in facts if f.probe.lower() in prompt and rng.random() < 0.5]
        return "Summary:\n" + "\n".join(f"- {f.probe}" for f in kept)

    return reply


def _ours_with_half_model(seed: int) -> tuple[float, float]:
    rng = random.Random(seed)
    facts: list[Planted] = []
    fake = ScriptedCompleter([_half_summary(facts, rng)] * 50)
    # limit = (window - reserve) * 0.75 = 60k, like the middleware's trigger; keep 6k.
    condenser = create_condenser(
        model=Model("m", 82_048),
        complete_sync=fake.sync,
        summarizer_model=Model("s", 400_000),
        policy=BudgetPolicy(keep_recent=6000),
    )
    history: list = []
    for g in range(5):
        m, f = generation_material(seed, g, 150)
        facts += f
        history = list(condenser.run_sync(history + m).messages)
    text = text_of(history)
    first = [f for f in facts if f.generation == 0]
    return retention(first, text)["overall"], retention(facts, text)["overall"]


def _peer_model(facts: list[Planted], rng: random.Random) -> Any:
    """A LangChain chat model that writes the same half-omitting summary as above."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class Forgetful(GenericFakeChatModel):
        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> Any:
            prompt = "\n".join(str(m.content) for m in messages).lower()
            kept = [f for f in facts if f.probe.lower() in prompt and rng.random() < 0.5]
            text = "Summary:\n" + "\n".join(f"- {f.probe}" for f in kept)
            return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])

    return Forgetful(messages=iter([]))


def _to_langchain(msgs: Sequence[Any], human: Any, ai: Any, tool: Any) -> list:
    out = []
    for m in msgs:
        if isinstance(m, UserMessage):
            out.append(human(message_text(m)))
        elif isinstance(m, AssistantMessage):
            calls = (
                [
                    {"id": b.id, "name": b.name, "args": dict(b.arguments)}
                    for b in m.content
                    if isinstance(b, ToolCallBlock)
                ]
                if not isinstance(m.content, str)
                else []
            )
            text = (
                m.content
                if isinstance(m.content, str)
                else "\n".join(b.text for b in m.content if isinstance(b, TextBlock))
            )
            out.append(ai(text, tool_calls=calls))
        elif isinstance(m, ToolResultMessage):
            out.append(
                tool(
                    message_text(m),
                    tool_call_id=m.tool_call_id,
                    status="error" if m.is_error else "success",
                )
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--counter", default="heuristic")
    parser.add_argument(
        "--real",
        type=Path,
        default=None,
        help="a folder of Claude Code *.jsonl sessions with compactions",
    )
    parser.add_argument("--skip", default="", help="comma-separated scenario numbers to skip")
    args = parser.parse_args()
    counter = None if args.counter == "heuristic" else resolve_counter(args.counter)
    skip = set(args.skip.split(","))
    if "1" not in skip:
        one_compaction(args.seeds, counter)
    if "2" not in skip:
        print("\n2. Successive compactions, new material between them (network-free digest)")
        for generations in (5, 10):
            opened = open_error_survival(args.seeds, counter, generations)
            for tokens in (2000, 4000):
                r = successive(args.seeds, counter, generations, tokens)
                print(
                    f"   after {generations}, digest {tokens:,} tokens: first-generation facts "
                    f"{pct(r['first'])}, all facts {pct(r['all'])} (without superseded plan "
                    f"steps {pct(r['current'])}); objective {pct(r['objective'])}, "
                    f"constraints {pct(r['constraint'])}, first-generation files "
                    f"{pct(r['file'])}, open errors {pct(opened)}; in the carried ledger "
                    f"{pct(r['ledger'])}"
                )
    if "3" not in skip:
        audit(args.seeds, counter)
    if "4" not in skip:
        masking(args.seeds, counter)
    if "5" not in skip:
        peer_langchain(args.seeds)
    if args.real is not None:
        real_sessions(args.real, counter)


if __name__ == "__main__":
    main()
