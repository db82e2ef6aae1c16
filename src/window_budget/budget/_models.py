"""Context windows and output limits of well-known models, matched on the ids people pass.

The figures are the providers' published limits (Anthropic's, OpenAI's and Google's model
pages). A model id is matched after dropping what varies around the family name: a provider
prefix (``anthropic/``, ``openrouter/openai/``, Bedrock's ``us.anthropic.``), a date
(``-20250929``, ``-2024-08-06``, ``@20240620``), a version or tag suffix (``-v1:0``,
``-latest``, ``:free``); then the longest family name that the rest starts with, up to a
``-`` or the end, wins (``gpt-4o-mini-2024-07-18`` is ``gpt-4o-mini``, not ``gpt-4o``).

>>> context_window_for("anthropic/claude-sonnet-4-5-20250929")
200000
>>> context_window_for("gpt-4o-2024-08-06")
128000
>>> context_window_for("my-local-model") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType

from window_budget.contract import Model
from window_budget.errors import ConfigError

__all__ = ["KNOWN_MODELS", "ModelLimits", "context_window_for", "lookup_model", "model_for"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelLimits:
    """What a provider publishes about one model family."""

    family: str
    """The family name ids are matched on (``claude-sonnet-4-5``)."""
    context_window: int
    """Total tokens the model accepts, prompt plus output."""
    max_output_tokens: int
    """The most tokens one reply may hold."""


def _family(family: str, window: int, output: int) -> tuple[str, ModelLimits]:
    return family, ModelLimits(family=family, context_window=window, max_output_tokens=output)


KNOWN_MODELS: MappingProxyType[str, ModelLimits] = MappingProxyType(
    dict(
        [
            # Anthropic: every current model has a 200k window (Sonnet 4 and 4.5 offer 1M in beta,
            # behind a header: the default is what a request gets without it).
            _family("claude-opus-4-5", 200_000, 64_000),
            _family("claude-opus-4-1", 200_000, 32_000),
            _family("claude-opus-4", 200_000, 32_000),
            _family("claude-sonnet-4-5", 200_000, 64_000),
            _family("claude-sonnet-4", 200_000, 64_000),
            _family("claude-haiku-4-5", 200_000, 64_000),
            _family("claude-3-7-sonnet", 200_000, 64_000),
            _family("claude-3-5-sonnet", 200_000, 8_192),
            _family("claude-3-5-haiku", 200_000, 8_192),
            _family("claude-3-opus", 200_000, 4_096),
            _family("claude-3-sonnet", 200_000, 4_096),
            _family("claude-3-haiku", 200_000, 4_096),
            # OpenAI
            _family("gpt-5", 400_000, 128_000),
            _family("gpt-5-mini", 400_000, 128_000),
            _family("gpt-5-nano", 400_000, 128_000),
            _family("gpt-4.1", 1_047_576, 32_768),
            _family("gpt-4.1-mini", 1_047_576, 32_768),
            _family("gpt-4.1-nano", 1_047_576, 32_768),
            _family("gpt-4o", 128_000, 16_384),
            _family("gpt-4o-mini", 128_000, 16_384),
            _family("gpt-4-turbo", 128_000, 4_096),
            _family("gpt-4-32k", 32_768, 4_096),
            _family("gpt-4", 8_192, 8_192),
            _family("gpt-3.5-turbo", 16_385, 4_096),
            _family("o1", 200_000, 100_000),
            _family("o1-mini", 128_000, 65_536),
            _family("o3", 200_000, 100_000),
            _family("o3-mini", 200_000, 100_000),
            _family("o4-mini", 200_000, 100_000),
            # Google
            _family("gemini-2.5-pro", 1_048_576, 65_536),
            _family("gemini-2.5-flash", 1_048_576, 65_536),
            _family("gemini-2.0-flash", 1_048_576, 8_192),
            _family("gemini-1.5-pro", 2_097_152, 8_192),
            _family("gemini-1.5-flash", 1_048_576, 8_192),
        ]
    )
)
"""The table, keyed by family name."""

# A provider prefix is everything up to the last "/" (OpenRouter, LiteLLM, pi's
# "provider/model"), or Bedrock's "<region>.<vendor>." in front of the name.
_BEDROCK_PREFIX = re.compile(r"^(?:[a-z]{2}\.)?(?:anthropic|openai|google|meta|mistral)\.")
# Dates and release tags after the family name: -20250929, -2024-08-06, @20240620, -0613,
# -v1:0, -latest, -preview, :free, [1m].
_SUFFIX = re.compile(
    r"(?:[-@](?:\d{8}|\d{4}-\d{2}-\d{2}|\d{4})|-v\d+(?::\d+)?|-latest|-preview|:[\w.-]+"
    r"|\[[\w.]+\])$"
)
_BY_LENGTH = sorted(KNOWN_MODELS, key=len, reverse=True)


def _normalize(model_id: str) -> str:
    name = model_id.strip().lower().rsplit("/", 1)[-1]
    name = _BEDROCK_PREFIX.sub("", name)
    while True:
        shorter = _SUFFIX.sub("", name)
        if shorter == name:
            return name
        name = shorter


def lookup_model(model_id: str | None) -> ModelLimits | None:
    """The published limits of the model ``model_id`` names, or None when it is not known.

    >>> lookup_model("us.anthropic.claude-3-5-sonnet-20240620-v1:0").max_output_tokens
    8192
    """
    if not isinstance(model_id, str) or not model_id.strip():
        return None
    name = _normalize(model_id)
    for family in _BY_LENGTH:
        if name == family or (name.startswith(family) and name[len(family)] == "-"):
            return KNOWN_MODELS[family]
    return None


def context_window_for(model_id: str | None) -> int | None:
    """The context window of the model ``model_id`` names, or None when it is not known."""
    limits = lookup_model(model_id)
    return limits.context_window if limits is not None else None


def model_for(model_id: str | None, *, context_window: int | None = None) -> Model:
    """A :class:`~window_budget.Model` for ``model_id``, its window taken from the table.

    ``context_window`` overrides the table (a deployment with a smaller or a beta window);
    the output limit still comes from the table when the model is known.

    Raises:
        ConfigError: the model is not in the table and no ``context_window`` was given.

    >>> model_for("claude-haiku-4-5-20251001")
    Model(id='claude-haiku-4-5-20251001', context_window=200000, max_output_tokens=64000)

    """
    limits = lookup_model(model_id)
    name = model_id if isinstance(model_id, str) and model_id.strip() else "transcript"
    if context_window is not None:
        return Model(name, context_window, limits.max_output_tokens if limits else None)
    if limits is None:
        what = (
            f"of model {model_id!r} is not known"
            if name == model_id
            else ("is not known: no model is named")
        )
        raise ConfigError(
            f"the context window {what}; give it (--window N on the command line, "
            "context_window=N in code)"
        )
    return Model(name, limits.context_window, limits.max_output_tokens)
