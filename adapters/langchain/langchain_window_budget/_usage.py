"""Which reply's usage figure may anchor the gate: stale marks and the provider check.

A reply's ``usage_metadata`` measured the request it answered. It anchors the next gate
only when that request was the transcript as stored (not a copy condensed for one call:
:func:`mark_usage_stale`) and when it came from the guarded model's provider (a reply that
names another provider, aliases aside, measured another tokenizer's tokens).
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage

from langchain_window_budget._digest import DIGEST_KEY
from window_budget.budget import usage_from_langchain
from window_budget.messages import Usage

__all__ = [
    "chat_model_provider",
    "mark_usage_stale",
    "other_provider",
    "reply_model",
    "usage",
    "usage_is_stale",
]


def reply_model(message: AIMessage) -> str | None:
    meta = message.response_metadata or {}
    for key in ("model_name", "model", "model_id"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def usage(message: AIMessage) -> Usage | None:
    return usage_from_langchain(message.usage_metadata) if message.usage_metadata else None


def usage_is_stale(message: object) -> bool:
    """True for an ``AIMessage`` this adapter marked: its usage measured another request."""
    if not isinstance(message, AIMessage):
        return False
    mark = (message.response_metadata or {}).get(DIGEST_KEY)
    return isinstance(mark, dict) and mark.get("stale_usage") is True


def mark_usage_stale(message: BaseMessage) -> BaseMessage:
    """A copy of an ``AIMessage`` whose usage figure the gate will no longer anchor on.

    Used when the figure measured a list other than the one the message now sits in (a
    trimmed transcript, a request condensed for one call only). ``usage_metadata`` itself
    is kept for cost accounting; the mark lives in ``response_metadata``, which chat-model
    integrations do not send back to the provider. Other messages come back unchanged.
    """
    if not isinstance(message, AIMessage) or not message.usage_metadata or usage_is_stale(message):
        return message
    meta = dict(message.response_metadata or {})
    meta[DIGEST_KEY] = {**(meta.get(DIGEST_KEY) or {}), "stale_usage": True}
    return message.model_copy(update={"response_metadata": meta})


_PROVIDER_ALIASES: dict[str, frozenset[str]] = {
    "amazon_bedrock": frozenset({"bedrock", "bedrock_converse"}),
    "openai-mantle": frozenset({"openai"}),
    "anthropic-mantle": frozenset({"anthropic"}),
}
"""Providers whose replies name another provider (``SummarizationMiddleware``'s table)."""


def chat_model_provider(chat_model: object) -> str | None:
    """The provider a chat model traces under (``ls_provider``), or None."""
    try:
        name = chat_model._get_ls_params().get("ls_provider")  # type: ignore[attr-defined]
    except Exception:
        return None
    return name if isinstance(name, str) and name else None


def other_provider(message: AIMessage, provider: str | None) -> bool:
    """True when the reply names a provider other than the guarded model's (or an alias)."""
    said = (message.response_metadata or {}).get("model_provider")
    if provider is None or not isinstance(said, str) or not said:
        return False
    return said != provider and said not in _PROVIDER_ALIASES.get(provider, frozenset())
