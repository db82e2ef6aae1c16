"""A URL image without a media type takes the type its file name suggests."""

from __future__ import annotations

import io
import json

import pytest

from window_budget.readers import read_transcript


@pytest.mark.parametrize(
    ("url", "mime"),
    [
        ("https://x.test/a.jpg", "image/jpeg"),
        ("https://x.test/b.webp?size=2", "image/webp"),
        ("https://x.test/plain", "image/png"),
    ],
)
def test_url_images_keep_a_sensible_mime_type(url: str, mime: str) -> None:
    line = {
        "type": "user",
        "sessionId": "s",
        "uuid": "u1",
        "message": {
            "role": "user",
            "content": [{"type": "image", "source": {"type": "url", "url": url}}],
        },
    }
    back = read_transcript(io.StringIO(json.dumps(line) + "\n"), format="claude-code")
    block = back.messages[0].content[0]  # type: ignore[union-attr,index]
    assert block.data == url  # type: ignore[union-attr]
    assert block.mime_type == mime  # type: ignore[union-attr]
