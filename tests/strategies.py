"""Hypothesis strategies for transcripts: tool groups, images, unknown roles, odd content."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from window_budget import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultMessage,
    Usage,
    UserMessage,
)

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=400)
big_text = st.integers(0, 6000).map(lambda n: "lorem ipsum " * (n // 12))
words = st.lists(
    st.sampled_from(["loader", "config", "TOML", "fails", "on", "empty", "keys", "fix", "the"]),
    min_size=1,
    max_size=400,
).map(" ".join)
"""A few words to a few thousand characters of prose a shortening can cut anywhere."""


@dataclass(frozen=True)
class StrangeMessage:
    """A message of a role the core does not know."""

    role: str
    payload: object


def _user(draw: st.DrawFn) -> AgentMessage:
    if draw(st.booleans()):
        return UserMessage(draw(st.one_of(text, big_text)))
    blocks = draw(
        st.lists(
            st.one_of(text.map(TextBlock), st.just(ImageBlock("aGVsbG8=", "image/png"))),
            min_size=0,
            max_size=3,
        )
    )
    return UserMessage(blocks)


@st.composite
def tool_group(draw: st.DrawFn, prefix: str) -> list[AgentMessage]:
    """An assistant turn with 1-3 (parallel) calls and their results, sometimes one missing."""
    n = draw(st.integers(1, 3))
    ids = [f"{prefix}-{i}" for i in range(n)]
    blocks: list[object] = []
    if draw(st.booleans()):
        blocks.append(ThinkingBlock(draw(text)))
    blocks.append(TextBlock(draw(text)))
    blocks.extend(ToolCallBlock(i, "bash", {"command": draw(text)}) for i in ids)
    usage = draw(
        st.one_of(st.none(), st.builds(Usage, st.integers(0, 50_000), st.integers(0, 2000)))
    )
    out: list[AgentMessage] = [AssistantMessage(blocks, usage=usage)]  # type: ignore[arg-type]
    aborted = draw(st.booleans()) and draw(st.booleans())
    for k, i in enumerate(ids):
        if aborted and k == n - 1:
            break
        content = draw(st.one_of(big_text, text))
        out.append(ToolResultMessage(i, "bash", content, is_error=draw(st.booleans())))
    return out


@st.composite
def transcripts(draw: st.DrawFn, max_groups: int = 25) -> list[AgentMessage]:
    """A transcript mixing every role, tool groups, images, orphans and unknown roles."""
    msgs: list[AgentMessage] = []
    for g in range(draw(st.integers(0, max_groups))):
        kind = draw(st.integers(0, 9))
        if kind <= 2:
            msgs.append(_user(draw))
        elif kind <= 5:
            msgs.extend(draw(tool_group(f"g{g}")))
        elif kind == 6:
            msgs.append(AssistantMessage(draw(text)))
        elif kind == 7:
            msgs.append(
                draw(
                    st.sampled_from(
                        [
                            BashExecutionMessage("ls -la", "total 0", exit_code=0),
                            CustomMessage("note", "remember the flag"),
                            BranchSummaryMessage("tried the other path"),
                            CompactionSummaryMessage("an older summary", tokens_before=1000),
                        ]
                    )
                )
            )
        elif kind == 8:
            msgs.append(ToolResultMessage(f"orphan-{g}", "bash", draw(text)))
        else:
            msgs.append(StrangeMessage("systemNote", {"text": draw(text), "n": g}))
    return msgs
