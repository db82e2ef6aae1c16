"""Write ``agent_session.jsonl``: a small coding-agent session in pi's JSONL format.

The session is made up (a coding agent making webhook retries idempotent), written in
the shape real pi sessions have: a ``session`` header, ``model_change`` and
``thinking_level_change`` entries, assistant turns with thinking, text and ``toolCall``
blocks and provider ``usage``, tool results (some failing), shell commands the user ran
(``bashExecution``), an image, and a turn aborted before its tool result arrived.

The usage figures are what a provider would report if the system prompt and tool
definitions came to 2,900 tokens and the message texts were counted with
``cl100k_base`` (an image at about 400 tokens). They are made up the way a provider
counts, not copied from a real run.

Run ``python notebooks/data/make_agent_session.py`` to rewrite it (deterministic).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from window_budget.budget import load_encoding

OUT = Path(__file__).with_name("agent_session.jsonl")
SYSTEM_TOKENS = 2_900
ENC = load_encoding("cl100k_base")
PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJ"
    "RU5ErkJggg=="
)

FILES = {
    "payments/webhooks.py": "handle(event): verify the WEBHOOK_SECRET_V2 signature, then apply the event",
    "payments/retry.py": "retry(fn, attempts=5): exponential backoff from 0.5 s, capped at 30 s",
    "payments/models.py": "WebhookEvent(id, kind, payload, received_at) stored in webhook_events",
    "tests/test_webhooks.py": "tests for signature checks, duplicate deliveries and retries",
    "payments/metrics.py": "counters exported on port 8443 under /metrics",
}
ASKS = [
    "Ticket PAY-2817: Stripe retries a webhook when we answer slowly and we apply the same "
    "event twice. Make the webhook handler idempotent. Never touch the migrations/ folder, "
    "don't add dependencies, and keep it Python 3.11 compatible.",
    "Start by reproducing the duplicate in a test.",
    "Good. Use the event id as the idempotency key, not a hash of the payload.",
    "What happens when two deliveries race? Make sure only one wins.",
    "Run the whole webhooks suite.",
    "Also count retries: add a metric webhook_retry_total next to the others.",
    "The staging endpoint is https://staging.pay.example.net/hooks - note it for the smoke test.",
    "Here is the dashboard from last night's incident, does it match your theory?",
    "Check the retry backoff too: it must give up after 5 attempts.",
    "Refactor the signature check out of handle() into verify_signature().",
    "Run mypy on payments/.",
    "The flaky test test_concurrent_delivery failed on CI again, look at it.",
    "Use SELECT ... FOR UPDATE SKIP LOCKED instead of the advisory lock.",
    "Update the docstring of handle() to say deliveries are idempotent.",
    "Run the whole suite once more.",
    "Write a short changelog entry under 'Fixed'.",
    "One more: log the duplicate deliveries at INFO with the event id.",
    "Summarize what changed for the PR description.",
]

DONE = [
    "Done with step {n}; the change is in {path}.",
    "Step {n} is finished, see {path}.",
    "That is in place ({path}); step {n} done.",
    "Finished step {n}. {path} is updated.",
]


def code_listing(path: str, rng: random.Random, lines: int) -> str:
    head = f'"""{path}: {FILES[path]}."""\n\nfrom __future__ import annotations\n\n'
    body = []
    for i in range(lines):
        name = rng.choice(["event", "delivery", "attempt", "payload", "signature", "row"])
        body.append(
            f"def step_{i}({name}: dict[str, object]) -> bool:\n"
            f"    # {FILES[path].split(':')[0]} part {i}\n"
            f"    return bool({name}.get('id')) and len({name}) > {rng.randint(1, 9)}\n"
        )
    return head + "\n".join(body)


def pytest_log(rng: random.Random, failing: bool, n: int) -> str:
    lines = [f"tests/test_webhooks.py::test_case_{i} PASSED" for i in range(n)]
    if failing:
        lines += [
            "tests/test_webhooks.py::test_duplicate_delivery FAILED",
            "",
            "E   sqlalchemy.exc.IntegrityError: (psycopg.errors.UniqueViolation) duplicate "
            'key value violates unique constraint "webhook_events_pkey"',
            "E   DETAIL:  Key (id)=(evt_1Q2w3E4r5T6y) already exists.",
            f"==== 1 failed, {n} passed in {rng.uniform(1, 4):.2f}s ====",
        ]
    else:
        lines.append(f"==== {n} passed in {rng.uniform(1, 4):.2f}s ====")
    return "\n".join(lines)


def tokens(entry: dict) -> int:
    """What a provider would bill for one message: its texts in cl100k_base, plus framing."""
    message = entry["message"]
    texts = [message.get("command", ""), message.get("output", "")]
    for block in message.get("content", []):
        texts += [block.get("text", ""), block.get("thinking", ""), block.get("name", "")]
        if block["type"] == "toolCall":
            texts.append(json.dumps(block["arguments"]))
        if block["type"] == "image":
            texts.append("x" * 3000)  # an image costs about a thousand tokens
    return sum(len(ENC.encode(t)) for t in texts) + 4


def main() -> None:
    rng = random.Random(2817)
    entries: list[dict] = [
        {
            "type": "session",
            "id": "pi-webhooks-0001",
            "timestamp": "2026-03-02T09:00:00.000Z",
            "cwd": "/home/dev/payments",
            "version": 3,
        },
        {
            "type": "model_change",
            "id": "e0",
            "provider": "anthropic",
            "modelId": "claude-sonnet-4-5",
        },
    ]
    context = SYSTEM_TOKENS
    n = 0

    def add(message: dict) -> None:
        nonlocal n, context
        n += 1
        entry = {"type": "message", "id": f"e{n}", "message": message}
        if message["role"] == "assistant":
            out = tokens(entry)
            new = rng.randint(40, 400)
            message["usage"] = {
                "input": new,
                "output": out,
                "cacheRead": max(0, context - new - 300),
                "cacheWrite": min(300, context),
            }
            message.update(
                stopReason="toolUse"
                if any(b["type"] == "toolCall" for b in message["content"])
                else "stop",
                model="claude-sonnet-4-5",
                provider="anthropic",
            )
        context += tokens(entry)
        entries.append(entry)

    call = 0
    for turn, ask in enumerate(ASKS):
        content: list[dict] = [{"type": "text", "text": ask}]
        if "dashboard" in ask:
            content.append({"type": "image", "data": PIXEL, "mimeType": "image/png"})
        add({"role": "user", "content": content})
        if turn == 4:
            entries.append(
                {"type": "thinking_level_change", "id": f"t{turn}", "thinkingLevel": "high"}
            )
        for step in range(rng.randint(2, 4)):
            call += 1
            path = rng.choice(list(FILES))
            kind = rng.choice(["read", "bash", "edit", "grep"])
            args = (
                {"command": "pytest -q tests/test_webhooks.py"}
                if kind == "bash"
                else {"pattern": "event.id", "path": "payments/"}
                if kind == "grep"
                else {"path": path, "oldText": "return True", "newText": "return applied"}
                if kind == "edit"
                else {"path": path}
            )
            add(
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "thinking",
                            "thinking": f"Turn {turn + 1}, step {step + 1}: {kind} {path}.",
                        },
                        {
                            "type": "text",
                            "text": f"Let me {kind} {path if kind != 'bash' else 'the tests'}.",
                        },
                        {
                            "type": "toolCall",
                            "id": f"toolu_{call:03d}",
                            "name": kind,
                            "arguments": args,
                        },
                    ],
                }
            )
            if turn == 11 and step == 1:
                break  # the user aborted this turn: a call without a result, as real files have
            failing = kind == "bash" and turn in (1, 3, 11)
            output = (
                pytest_log(rng, failing, rng.randint(8, 40))
                if kind == "bash"
                else code_listing(path, rng, rng.randint(4, 18))
                if kind == "read"
                else "\n".join(
                    f"{p}:{rng.randint(1, 300)}:    key = event.id"
                    for p in FILES
                    if p.startswith("payments")
                )
                if kind == "grep"
                else f"Edited {path}: 1 replacement."
            )
            add(
                {
                    "role": "toolResult",
                    "toolCallId": f"toolu_{call:03d}",
                    "toolName": kind,
                    "content": [{"type": "text", "text": output}],
                    "isError": failing,
                }
            )
        if turn in (6, 14):
            add(
                {
                    "role": "bashExecution",
                    "command": "git diff --stat",
                    "output": "\n".join(f" {p} | {rng.randint(2, 40)} ++--" for p in FILES),
                    "exitCode": 0,
                    "cancelled": False,
                    "truncated": False,
                }
            )
        add(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": rng.choice(DONE).format(n=turn + 1, path=path)}
                ],
            }
        )
    OUT.write_text(
        "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), encoding="utf-8"
    )


if __name__ == "__main__":
    main()
