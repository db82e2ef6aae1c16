"""Old images swapped for placeholders: the first, cheapest pass of trimming by category.

Every image but the most recent becomes a short text placeholder that records what it
replaced (media type, size, a hash), so an archive can match it later.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

from window_budget.messages import AgentMessage, Content, ImageBlock, TextBlock, message_blocks
from window_budget.pipeline._categories import Classifier, MessageCategory, classify_message

__all__ = ["ImageReplacement", "replace_old_images", "replace_old_images_classified"]


@dataclass(frozen=True, slots=True)
class ImageReplacement:
    """Record of one image swapped for a placeholder."""

    index: int
    """Index of the message in the input transcript."""
    block: int
    """Index of the block inside that message's content."""
    mime_type: str
    """Media type of the image."""
    data_chars: int
    """Length of its (base64) data."""
    sha256: str
    """First 12 hex digits of the SHA-256 of the data, to match it against an archive."""

    @property
    def placeholder(self) -> str:
        """The text that stands in for the image."""
        return (
            f"[earlier image removed by window-budget: {self.mime_type}, "
            f"{self.data_chars:,} data chars, sha256 {self.sha256} — only the most recent "
            "image is kept]"
        )


def _images_in(message: AgentMessage) -> list[int]:
    """Indexes of the image blocks in a message's content."""
    return [i for i, b in enumerate(message_blocks(message)) if isinstance(b, ImageBlock)]


def replace_old_images(
    messages: Sequence[AgentMessage],
    *,
    classify: Classifier = classify_message,
) -> tuple[list[AgentMessage], tuple[ImageReplacement, ...]]:
    """Replace every image but the most recent with a placeholder (SYSTEM messages untouched).

    Returns a new list (untouched messages are the same objects) and what was replaced,
    oldest first. With one image or none, the list holds exactly the input objects.
    """
    return replace_old_images_classified(messages, [classify(m) for m in messages])


def replace_old_images_classified(
    messages: Sequence[AgentMessage],
    cats: Sequence[MessageCategory],
) -> tuple[list[AgentMessage], tuple[ImageReplacement, ...]]:
    """:func:`replace_old_images` with each message's category already known (``cats``)."""
    spots = [
        (i, b)
        for i, m in enumerate(messages)
        if cats[i] is not MessageCategory.SYSTEM
        for b in _images_in(m)
    ]
    out = list(messages)
    records: list[ImageReplacement] = []
    for i, b in spots[:-1]:
        content = getattr(out[i], "content", None)
        assert isinstance(content, tuple)
        image = content[b]
        assert isinstance(image, ImageBlock)
        rec = ImageReplacement(
            i,
            b,
            image.mime_type,
            len(image.data),
            hashlib.sha256(image.data.encode()).hexdigest()[:12],
        )
        records.append(rec)
        new_content: Content = (*content[:b], TextBlock(rec.placeholder), *content[b + 1 :])
        out[i] = replace(out[i], content=new_content)  # type: ignore[type-var]
    return out, tuple(records)
