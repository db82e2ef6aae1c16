"""Smoke check of the real benchmark model: load it, have it summarize a 10-line coding
conversation into three bullet points, print the reply and the speed.

Run with the project's dev venv, after ``bench/real_model/setup.sh``:

    python bench/real_model/smoke.py [--model PATH] [--max-tokens N]

The request is sent twice; the two replies must be identical (greedy decoding, fixed
seed, prompt evaluated from scratch each call), else the script exits 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, as for bench scripts

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from real_model.chat import default_model_path, load_chat_model

CONVERSATION = """\
user: The nightly job crashes with KeyError: 'tenant_id' in billing/export.py line 88.
assistant: Line 88 reads row["tenant_id"]; rows from the legacy table have no such key.
user: Right, the legacy rows use "account" instead. Can we map it?
assistant: I added _tenant_of(row) that falls back to row["account"] when tenant_id is absent.
user: Tests pass locally, but CI fails on Python 3.11 only.
assistant: 3.11 runs the old fixture: tests/fixtures/legacy.csv lacks the account column.
user: Then add the column to the fixture and keep the fallback.
assistant: Done: fixture updated, test_export_legacy_rows added, CI green on 3.11 and 3.12.
user: Constraint: never drop a legacy row silently; log and count skipped rows instead.
assistant: Skipped rows are now logged at WARNING and counted in export_skipped_total."""


def main() -> int:
    parser = argparse.ArgumentParser(description="Smoke check of the real benchmark model.")
    parser.add_argument("--model", type=Path, default=None, help=f"default: {default_model_path()}")
    parser.add_argument("--max-tokens", type=int, default=200)
    args = parser.parse_args()

    started = time.perf_counter()
    model = load_chat_model(args.model, max_tokens=args.max_tokens)
    print(f"model: {model.model_path}")
    print(f"loaded in {time.perf_counter() - started:.1f} s (n_ctx={model.n_ctx}, threads=2)")

    messages = [
        SystemMessage(
            "You summarize coding conversations. Answer with exactly three bullet points, "
            "one line each, each starting with '- ', and nothing else."
        ),
        HumanMessage(
            "Summarize this conversation between a user and a coding assistant in three "
            "bullet points. Keep file names, errors and constraints.\n\n" + CONVERSATION
        ),
    ]
    replies: list[AIMessage] = []
    for run in (1, 2):
        reply = model.invoke(messages)
        replies.append(reply)
        usage = reply.usage_metadata
        if usage is None:
            raise SystemExit("the reply carries no usage_metadata")
        t = reply.response_metadata["timings"]
        print(
            f"\nrun {run}: {usage['input_tokens']} prompt tokens, "
            f"{usage['output_tokens']} reply tokens, {t['wall_s']:.1f} s wall "
            f"(finish: {reply.response_metadata['finish_reason']}; "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
        )
        if t["prompt_eval_ms"] and t["eval_ms"]:
            print(
                f"  prompt processing: {t['prompt_eval_tokens'] / t['prompt_eval_ms'] * 1000:.1f}"
                f" tokens/s; generation: {t['eval_tokens'] / t['eval_ms'] * 1000:.1f} tokens/s;"
                f" reply tokens per wall second: {usage['output_tokens'] / t['wall_s']:.1f}"
            )

    print("\n--- reply ---")
    print(replies[0].content)
    print("--- end ---")
    same = replies[0].content == replies[1].content
    print(f"\ndeterministic (two runs, same reply): {'yes' if same else 'NO'}")
    return 0 if same and replies[0].content else 1


if __name__ == "__main__":
    sys.exit(main())
