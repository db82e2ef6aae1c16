"""A LangChain chat model over a local GGUF file run by llama.cpp (``llama_cpp.Llama``).

``bench/real_model/setup.sh`` builds llama-cpp-python into a virtual environment of its
own (``$WINDOW_BUDGET_MODEL_HOME/venv``, default ``~/.cache/window-budget-model/venv``) and
puts the model beside it. Bench code runs from the project's dev venv, which has no
``llama_cpp``: :func:`import_llama_cpp` then *appends* that venv's ``site-packages`` to
``sys.path``, so ``llama_cpp`` (and what it needs that the dev venv lacks, e.g.
``diskcache``) come from there while every package the dev venv has still wins. Both
venvs are made from the same Python, so the import is sound.

From a script in ``bench/``::

    from real_model.chat import load_chat_model

    model = load_chat_model()  # or load_chat_model(n_ctx=4096, max_tokens=256)
    reply = model.invoke("Summarize ...")
    reply.content, reply.usage_metadata

Replies are deterministic: greedy decoding (``temperature=0``) with a fixed ``seed``, and
by default each call evaluates its prompt from scratch (``reuse_prefix=False``), so a
reply depends on the messages alone, never on the call before it. ``reuse_prefix=True``
keeps llama.cpp's prompt-prefix cache between calls: much faster for a growing
conversation, but the numbers can differ in the last bits, and so can a greedy reply.

llama.cpp's CPU threads meet at an OpenMP barrier after every operation; by default they
spin there, which collapses when other processes share the cores (measured here, 2 threads
on 2 busy cores: 0.5-4.7 generated tokens/s spinning, 2.8-9.5 with sleeping waits). So
:func:`import_llama_cpp` sets ``OMP_WAIT_POLICY=PASSIVE`` unless it is set already; it
acts only if it runs before anything in the process has loaded OpenMP.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

if TYPE_CHECKING:
    from llama_cpp import Llama

MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
SETUP_HINT = "run bench/real_model/setup.sh (see bench/real_model/README.md)"


def model_home() -> Path:
    """``$WINDOW_BUDGET_MODEL_HOME``, default ``~/.cache/window-budget-model``."""
    home = os.environ.get("WINDOW_BUDGET_MODEL_HOME") or "~/.cache/window-budget-model"
    return Path(home).expanduser()


def default_model_path() -> Path:
    """``$WINDOW_BUDGET_MODEL`` if set, else the GGUF that setup.sh puts in the model home."""
    env = os.environ.get("WINDOW_BUDGET_MODEL")
    return Path(env).expanduser() if env else model_home() / MODEL_FILENAME


def import_llama_cpp() -> ModuleType:
    """``llama_cpp`` from this interpreter, else from the venv that setup.sh built."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import llama_cpp
    except ImportError:
        pass
    else:
        return llama_cpp
    lib = model_home() / "venv" / "lib"
    site = lib / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    if not site.is_dir():
        found = ", ".join(sorted(p.name for p in lib.glob("python*"))) if lib.is_dir() else ""
        mismatch = f" (that venv has {found}; this is {sys.version.split()[0]})" if found else ""
        raise ImportError(
            f"llama_cpp is not importable and {site} does not exist{mismatch}: {SETUP_HINT}"
        )
    if str(site) not in sys.path:
        sys.path.append(str(site))
    import llama_cpp

    return llama_cpp


def _text(message: BaseMessage) -> str:
    return str(message.text)


def to_llama_messages(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as the OpenAI-style dicts ``create_chat_completion`` takes.

    An AI message's tool calls keep their arguments as a dict: the model's own chat
    template (Qwen2.5's, read from the GGUF) writes them with ``tojson``.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": _text(m)})
        elif isinstance(m, HumanMessage):
            out.append({"role": "user", "content": _text(m)})
        elif isinstance(m, AIMessage):
            item: dict[str, Any] = {"role": "assistant", "content": _text(m)}
            if m.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": tc.get("id") or f"call_{i}",
                        "type": "function",
                        "function": {"name": tc["name"], "arguments": tc["args"]},
                    }
                    for i, tc in enumerate(m.tool_calls)
                ]
            out.append(item)
        elif isinstance(m, ToolMessage):
            out.append({"role": "tool", "content": _text(m), "tool_call_id": m.tool_call_id})
        elif isinstance(m, ChatMessage):
            out.append({"role": m.role, "content": _text(m)})
        else:
            raise TypeError(f"unsupported message type {type(m).__name__}")
    return out


class LlamaCppChatModel(BaseChatModel):
    """Chat model over ``llama_cpp.Llama``: deterministic, CPU, one model per instance."""

    model_path: str
    n_ctx: int = 8192
    max_tokens: int = 512
    temperature: float = 0.0
    seed: int = 0
    n_threads: int = 2
    n_batch: int = 512
    reuse_prefix: bool = False
    llama_verbose: bool = False

    _llama: Any = PrivateAttr(default=None)

    @property
    def _llm_type(self) -> str:
        return "llama-cpp-local"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_path": self.model_path,
            "n_ctx": self.n_ctx,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
        }

    @property
    def client(self) -> Llama:
        """The ``llama_cpp.Llama``, loaded on first use (a second or two; ~2 GB resident)."""
        if self._llama is None:
            llama_cpp = import_llama_cpp()
            self._llama = llama_cpp.Llama(
                model_path=self.model_path,
                n_ctx=self.n_ctx,
                n_batch=self.n_batch,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                seed=self.seed,
                verbose=self.llama_verbose,
            )
        return cast("Llama", self._llama)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        llm = self.client
        if not self.reuse_prefix:
            llm.reset()  # type: ignore[no-untyped-call]
        llama_cpp = import_llama_cpp()
        llama_cpp.llama_perf_context_reset(llm.ctx)
        params: dict[str, Any] = {
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            **kwargs,
        }
        started = time.perf_counter()
        response = llm.create_chat_completion(
            messages=cast("Any", to_llama_messages(messages)), stop=stop or [], **params
        )
        wall = time.perf_counter() - started
        if isinstance(response, Iterator):
            raise TypeError("create_chat_completion streamed; this wrapper does not stream")
        perf = llama_cpp.llama_perf_context(llm.ctx)
        choice = response["choices"][0]
        usage = response.get("usage") or {}
        message = AIMessage(
            content=choice["message"].get("content") or "",
            usage_metadata=UsageMetadata(
                input_tokens=usage.get("prompt_tokens", 0),
                output_tokens=usage.get("completion_tokens", 0),
                total_tokens=usage.get("total_tokens", 0),
            ),
            response_metadata={
                "model_name": Path(self.model_path).name,
                "finish_reason": choice.get("finish_reason"),
                "timings": {
                    "wall_s": wall,
                    "prompt_eval_ms": perf.t_p_eval_ms,
                    "prompt_eval_tokens": perf.n_p_eval,
                    "eval_ms": perf.t_eval_ms,
                    "eval_tokens": perf.n_eval,
                },
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def load_chat_model(path: str | os.PathLike[str] | None = None, **kw: Any) -> LlamaCppChatModel:
    """The benchmark model, loaded: ``path``, else ``$WINDOW_BUDGET_MODEL``, else the default.

    Keyword arguments set the model's fields (``n_ctx``, ``max_tokens``, ``seed``, ...).
    """
    model_path = Path(path).expanduser() if path is not None else default_model_path()
    if not model_path.is_file():
        raise FileNotFoundError(f"no model at {model_path}: {SETUP_HINT}")
    model = LlamaCppChatModel(model_path=str(model_path), **kw)
    _ = model.client
    return model
