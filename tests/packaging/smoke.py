"""Smoke test of the three distributions as a user installs them: built wheels, a clean venv.

``.ci/packaging`` installs ``window-budget[cli]``, ``langchain-window-budget`` and
``llama-index-memory-window-budget`` from freshly built wheels into a new virtual environment
and runs this file there with ``python -I`` from a temporary directory, so nothing of the
source tree is on ``sys.path``. It checks that each import package comes from that
environment's site-packages, that the three versions agree, and runs one conversation per
framework that must be condensed: a ``create_agent`` agent with ``WindowBudgetMiddleware`` and
a fake chat model, and a ``SimpleChatEngine`` with ``WindowBudgetMemory`` and ``MockLLM``.
Exits non-zero (an ``AssertionError``) on any failure.
"""

from __future__ import annotations

import importlib
import sysconfig
from importlib import metadata
from pathlib import Path

DISTRIBUTIONS = {
    "window-budget": "window_budget",
    "langchain-window-budget": "langchain_window_budget",
    "llama-index-memory-window-budget": "llama_index.memory.window_budget",
}


def check_installed_from_wheels() -> str:
    """Each package imports from this environment's site-packages; the versions agree."""
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    versions = set()
    for dist, module in DISTRIBUTIONS.items():
        path = Path(importlib.import_module(module).__file__ or "").resolve()
        assert path.is_relative_to(site), f"{module} imported from {path}, not from {site}"
        versions.add(metadata.version(dist))
    assert len(versions) == 1, f"the three distributions disagree on the version: {versions}"
    core = metadata.requires("langchain-window-budget") or []
    (version,) = versions
    assert f"window-budget=={version}" in core, core
    return version


def run_langchain_agent() -> int:
    """A ``create_agent`` agent over a long thread: the middleware folds its head into a digest."""
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from langchain_window_budget import WindowBudgetMiddleware, is_digest

    objective = "port the loader to tomllib in src/loader.py"
    seen: list[list[BaseMessage]] = []

    class Scripted(GenericFakeChatModel):
        """Writes the digest when asked for one, says "done" to the agent, records its input."""

        def _generate(self, messages: list[BaseMessage], *args: object, **kw: object) -> ChatResult:
            seen.append(list(messages))
            asked_for_digest = "<scrollback>" in str(messages[-1].content)
            text = (
                f"# Objective\n{objective}\n# Status\nActive: src/loader.py"
                if asked_for_digest
                else "done"
            )
            return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])

    model = Scripted(messages=iter(()))
    agent = create_agent(
        model, tools=[], middleware=[WindowBudgetMiddleware(model=model, context_window=4_000)]
    )
    thread: list[BaseMessage] = [HumanMessage(objective)]
    for i in range(30):
        thread += [
            AIMessage(f"ok {i} " * 40),
            HumanMessage(f"step {i}: go on with the loader " * 8),
        ]
    result = agent.invoke({"messages": thread})
    assert result["messages"][-1].text == "done", result["messages"][-1]
    agent_call = seen[-1]
    assert len(seen) >= 2, "the model was never asked for a digest"
    assert any(is_digest(m) for m in agent_call), "the agent's model saw no digest"
    assert len(agent_call) < len(thread), "the middleware did not condense the thread"
    return len(agent_call)


def run_llama_index_chat_engine() -> int:
    """A ``SimpleChatEngine`` over ``WindowBudgetMemory``: what the LLM reads stays in budget."""
    from llama_index.core.chat_engine import SimpleChatEngine
    from llama_index.core.llms import MockLLM

    from llama_index.memory.window_budget import WindowBudgetMemory

    # MockLLM echoes its prompt, which is no digest: the memory says so once on stderr ("the
    # summarizer failed ...") and the network-free digest stands; the call is made all the same.
    llm = MockLLM(max_tokens=60)
    memory = WindowBudgetMemory.from_defaults(llm=llm, context_window=2048)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    for i in range(40):
        engine.chat(f"question {i}: what should I check next in the retry logic?")
    assert memory.count_tokens(memory.get()) <= memory.token_limit
    everything = memory.get_all(include_archived=True)
    assert len(everything) > len(memory.get_all()), "nothing was folded into the archive"
    return len(everything)


def main() -> None:
    """Run the three checks and print one line each."""
    print(f"installed from wheels: version {check_installed_from_wheels()}")
    print(f"langchain: the agent's model read {run_langchain_agent()} messages")
    print(f"llama-index: {run_llama_index_chat_engine()} messages kept, archive included")


if __name__ == "__main__":
    main()
