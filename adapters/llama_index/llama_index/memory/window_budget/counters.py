"""How a memory counts: the counter specs ``from_defaults`` takes, and their names.

``"heuristic"`` (the default), ``"tiktoken"``, ``"llama_index"`` (LlamaIndex's configured
tokenizer, registered with the bridge here), a ``TokenCounter``, any ``str -> int`` callable,
or a peer's ``tokenizer_fn``; a counter is saved by name when the name rebuilds it anywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from window_budget import bridge
from window_budget.budget import CallableCounter
from window_budget.contract import TokenCounter

__all__ = [
    "CounterSpec",
    "resolve_counter",
    "serializable_counter",
    "tokenizer_counter",
    "tokenizer_spec",
]

CounterSpec = TokenCounter | Callable[[str], int] | Literal["heuristic", "tiktoken", "llama_index"]
"""How to count: the heuristic (default), tiktoken, LlamaIndex's configured tokenizer,
a ``TokenCounter`` or any ``str -> int`` callable."""


def _llama_index_counter(context: object) -> TokenCounter:
    from llama_index.core.utils import get_tokenizer

    return CallableCounter(lambda text: len(get_tokenizer()(text)), name="llama_index")


bridge.register_counter("llama_index", _llama_index_counter)


def resolve_counter(counter: CounterSpec | str | None) -> tuple[TokenCounter | None, str]:
    """The counter and the name it is serialized under (the bridge's one registry)."""
    return bridge.resolve_counter_spec(counter)


def serializable_counter(name: str) -> bool:
    """True for a counter name that rebuilds the same counter anywhere."""
    return name in ("heuristic", "tiktoken", "llama_index") or name.startswith("tiktoken:")


@dataclass(frozen=True, slots=True)
class _TokenizerLength:
    """``len(tokenizer_fn(text))``: a LlamaIndex tokenizer function as a ``str -> int`` counter."""

    tokenizer_fn: Callable[[str], Sequence[Any]]

    def __call__(self, text: str) -> int:
        return len(self.tokenizer_fn(text))


def tokenizer_counter(tokenizer_fn: Callable[[str], Sequence[Any]]) -> TokenCounter:
    """The counter for a peers' ``tokenizer_fn`` (a ``str -> list of tokens`` function)."""
    return CallableCounter(_TokenizerLength(tokenizer_fn), name="tokenizer_fn")


def tokenizer_spec(tokenizer_fn: Callable[[str], Sequence[Any]]) -> CounterSpec:
    """``"llama_index"`` for LlamaIndex's own tokenizer (saved by name), else its counter."""
    import llama_index.core

    if tokenizer_fn is llama_index.core.global_tokenizer:
        return "llama_index"
    return tokenizer_counter(tokenizer_fn)
