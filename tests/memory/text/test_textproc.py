"""CJK search text, low-entropy detection, token estimate, grapheme-safe truncation and chunking."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.text.textproc import (
    chunk_text,
    estimate_tokens,
    is_low_entropy,
    query_text_cjk,
    search_text_cjk,
    truncate_to_chars,
)

# --- CJK search text -------------------------------------------------------------------------------------------

SEARCH_TEXT_CASES = [
    ("我喜欢喝茶", "我喜 喜欢 欢喝 喝茶"),
    ("茶", "茶"),
    ("喝茶", "喝茶"),
    ("Uses pnpm, not npm", "uses pnpm, not npm"),
    ("用pnpm安装依赖", "用 pnpm 安装 装依 依赖"),
    ("项目用 Django 6.1，数据库是PostgreSQL。", "项目 目用 django 6.1, 数据 据库 库是 postgresql"),
    ("東京に行きます", "東京 京に に行 行き きま ます"),
    ("한국어 텍스트", "한국 국어 텍스 스트"),
    ("ＰＮＰＭ　と　ｎｐｍ", "pnpm と npm"),  # full-width Latin and ideographic space are normalised
    ("email bob@example.com — see docs/setup.md", "email bob@example.com see docs/setup.md"),
    ("", ""),
    ("   \n\t ", ""),
]


@pytest.mark.parametrize(("text", "expected"), SEARCH_TEXT_CASES)
def test_search_text_cjk(text: str, expected: str) -> None:
    assert search_text_cjk(text) == expected


@pytest.mark.parametrize(("text", "_expected"), SEARCH_TEXT_CASES)
def test_query_text_is_cut_exactly_like_search_text(text: str, _expected: str) -> None:
    assert query_text_cjk(text) == search_text_cjk(text)


@pytest.mark.parametrize(
    ("document", "query"),
    [
        ("我每天早上都喜欢喝绿茶", "喜欢喝"),
        ("部署脚本在 ops/deploy.sh 里面", "部署脚本"),
        ("The team prefers 东京 office", "东京"),
    ],
)
def test_substring_query_lexemes_are_all_in_document(document: str, query: str) -> None:
    assert set(query_text_cjk(query).split()) <= set(search_text_cjk(document).split())


def test_unrelated_cjk_query_shares_no_lexeme_with_document() -> None:
    assert not set(query_text_cjk("咖啡").split()) & set(search_text_cjk("我喜欢喝茶").split())


# --- low entropy ----------------------------------------------------------------------------------------------

LOW_ENTROPY = [
    "",
    "   \n\t",
    "...!!!???",
    "👍👍👍",
    "🎉🎉 🙏",
    "aaaaaaa",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "ok ok ok ok",
    "ok",
    "OK!",
    "thanks",
    "Thank you!",
    "ok thanks, got it",
    "lol",
    "hahahahaha",
    "sounds good!",
    "好的",
    "好的，谢谢！",
    "嗯嗯",
    "收到了",
    "哈哈哈哈哈哈",
    "はい",
    "test test test",
    "1000000",
    "abababababab",
    "aaaaaaab",
]


@pytest.mark.parametrize("text", LOW_ENTROPY)
def test_is_low_entropy_flags_contentless_text(text: str) -> None:
    assert is_low_entropy(text)


REAL_MEMORIES = [
    "Uses pnpm, not npm",
    "Prefers tabs",
    "喜欢喝茶",
    "喜欢茶",
    "爸爸妈妈",
    "dark mode",
    "Port 5432",
    "Deploys happen on Fridays after 4pm",
    "The deploy script lives in ops/deploy.sh",
    "项目用 Django 6.1，数据库是 PostgreSQL",
    "東京オフィスに勤務",
    "Uses pnpm. Uses pnpm. Uses pnpm.",  # repeated, but the repeated thing is real
    "ok, the staging database moved to db2.internal",  # starts like an acknowledgement
    "password=[REDACTED:password]",
]


@pytest.mark.parametrize("text", REAL_MEMORIES)
def test_is_low_entropy_keeps_short_real_memories(text: str) -> None:
    assert not is_low_entropy(text)


def test_min_chars_lets_callers_accept_shorter_memories() -> None:
    assert is_low_entropy("Use uv")
    assert not is_low_entropy("Use uv", min_chars=4)


def test_min_unique_ratio_flags_repetition_loops() -> None:
    loop = "deploy now " * 10  # 20 tokens, 2 distinct: ratio 0.1

    assert not is_low_entropy(loop)
    assert is_low_entropy(loop, min_unique_ratio=0.2)
    assert is_low_entropy("Uses pnpm. " * 12)


def test_min_entropy_bits_is_the_character_entropy_floor() -> None:
    text = "aabbaabbab"  # two symbols, 1 bit per character

    assert is_low_entropy(text)
    assert not is_low_entropy(text, min_entropy_bits=0.5)


def test_long_prose_with_natural_repetition_is_not_low_entropy() -> None:
    prose = (
        "When the deploy fails, check the logs of the worker first, then the logs of the web tier. "
        "The worker logs are in the worker container and the web logs are in the web container. "
    ) * 3

    assert not is_low_entropy(prose)


# --- token estimate -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0.0),
        ("abcd", 1.0),
        ("abcdefgh", 2.0),
        ("a b", 0.75),
        ("我喜欢", 4.5),
        ("我喜欢喝茶", 7.5),
        ("好，ok", 3.5),  # full-width comma counts like CJK
        ("東京です", 6.0),
        ("한국어", 4.5),
        ("Use 东京", 1.0 + 3.0),
    ],
)
def test_estimate_tokens_counts_cjk_at_1_5_and_other_text_at_4_chars(text: str, tokens: float) -> None:
    assert estimate_tokens(text) == pytest.approx(tokens)


def test_estimate_tokens_counts_chinese_far_above_length_over_four() -> None:
    text = "这是一段很长的中文记忆内容" * 10

    assert estimate_tokens(text) > 4 * (len(text) / 4)


# --- truncation -----------------------------------------------------------------------------------------------

FAMILY = "👨\u200d👩\u200d👧\u200d👦"  # one user-perceived character, seven code points
THUMBS_MEDIUM = "👍🏽"  # emoji + skin-tone modifier
E_ACUTE = "e\u0301"  # e + combining acute accent
FLAG_CN = "\U0001f1e8\U0001f1f3"


@pytest.mark.parametrize(
    ("text", "n", "expected"),
    [
        ("hello world", 11, "hello world"),
        ("hello world", 20, "hello world"),
        ("hello world", 8, "hello w…"),
        ("hello world", 7, "hello…"),  # trailing space before the ellipsis is dropped
        ("我喜欢喝茶", 3, "我喜…"),
        ("abc", 1, "…"),
        ("abc", 0, ""),
        ("abc", -5, ""),
        ("", 3, ""),
        (E_ACUTE * 4, 4, E_ACUTE + "…"),
        (E_ACUTE * 4, 3, E_ACUTE + "…"),
        (E_ACUTE * 4, 2, "…"),
        (FAMILY + "abc", 9, FAMILY + "a…"),
        (FAMILY + "abc", 5, "…"),
        (THUMBS_MEDIUM * 3, 4, THUMBS_MEDIUM + "…"),
        (FLAG_CN * 2, 3, FLAG_CN + "…"),
        ("a\r\nb", 3, "a…"),
    ],
)
def test_truncate_to_chars(text: str, n: int, expected: str) -> None:
    assert truncate_to_chars(text, n) == expected


@settings(database=None)  # no .hypothesis/ directory in the checkout
@given(st.text(), st.integers(min_value=0, max_value=60))
def test_truncate_never_exceeds_budget_and_keeps_a_prefix(text: str, n: int) -> None:
    cut = truncate_to_chars(text, n)

    assert len(cut) <= n
    if cut.endswith("…") and cut != text:
        assert text.startswith(cut[:-1])
    else:
        assert cut in (text, "")


def test_truncate_never_separates_a_letter_from_its_accent() -> None:
    text = "Cafe\u0301 au lait"

    for n in range(1, len(text)):
        kept = truncate_to_chars(text, n).removesuffix("…")
        assert text.startswith(kept)
        assert not unicodedata.combining(text[len(kept)])


# --- chunking -------------------------------------------------------------------------------------------------


def _paragraphs(count: int, sentences: int) -> str:
    return "\n\n".join(
        " ".join(f"Paragraph {p} sentence {s} says something." for s in range(sentences)) for p in range(count)
    )


def test_chunk_text_returns_short_text_whole() -> None:
    assert chunk_text("  Uses pnpm, not npm.  ") == ["Uses pnpm, not npm."]


@pytest.mark.parametrize("blank", ["", "   ", "\n\n\t"])
def test_chunk_text_of_blank_text_is_empty(blank: str) -> None:
    assert chunk_text(blank) == []


@pytest.mark.parametrize(("max_chars", "overlap"), [(0, 0), (-1, 0), (100, 100), (100, 150), (100, -1)])
def test_chunk_text_rejects_impossible_sizes(max_chars: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="must"):
        chunk_text("text", max_chars=max_chars, overlap=overlap)


@pytest.mark.parametrize(("max_chars", "overlap"), [(300, 50), (500, 0), (1500, 100), (120, 119)])
def test_chunk_text_respects_max_chars_and_loses_no_sentence(max_chars: int, overlap: int) -> None:
    text = _paragraphs(6, 25)

    chunks = chunk_text(text, max_chars=max_chars, overlap=overlap)

    assert len(chunks) > 1
    assert all(len(chunk) <= max_chars for chunk in chunks)
    for p in range(6):
        for s in range(25):
            assert any(f"Paragraph {p} sentence {s} says something." in chunk for chunk in chunks)


def test_chunk_text_cuts_between_sentences_when_it_can() -> None:
    chunks = chunk_text(_paragraphs(4, 20), max_chars=400, overlap=0)

    assert all(chunk.endswith("says something.") for chunk in chunks)
    assert all(chunk.startswith("Paragraph") for chunk in chunks)


def test_chunk_text_keeps_paragraphs_that_fit_whole() -> None:
    text = _paragraphs(3, 5)  # ~190 characters per paragraph

    chunks = chunk_text(text, max_chars=200, overlap=0)

    assert chunks == text.split("\n\n")


def test_chunk_text_overlap_repeats_the_end_of_the_previous_chunk() -> None:
    chunks = chunk_text(_paragraphs(3, 30), max_chars=300, overlap=80)

    for previous, current in zip(chunks, chunks[1:], strict=False):
        head = current.split(" says something.")[0]
        assert head in previous
        assert current.startswith("Paragraph")  # the overlap starts at a sentence, not mid-word


def test_chunk_text_without_overlap_reassembles_the_text() -> None:
    text = _paragraphs(5, 12)

    chunks = chunk_text(text, max_chars=250, overlap=0)

    assert " ".join(" ".join(chunks).split()) == " ".join(text.split())


def test_chunk_text_splits_unspaced_cjk_at_sentence_ends() -> None:
    text = "这是一个很长的中文句子。" * 200

    chunks = chunk_text(text, max_chars=500, overlap=40)

    assert all(len(chunk) <= 500 for chunk in chunks)
    assert all(chunk.endswith("。") for chunk in chunks)
    assert all(chunk.startswith("这是") for chunk in chunks)


def test_chunk_text_hard_splits_a_text_without_any_boundary() -> None:
    text = "x" * 5000

    chunks = chunk_text(text, max_chars=1500, overlap=100)

    assert all(len(chunk) <= 1500 for chunk in chunks)
    assert sum(len(chunk) for chunk in chunks) >= len(text)


def test_chunk_text_hard_split_keeps_combining_marks_with_their_letter() -> None:
    text = E_ACUTE * 1000

    chunks = chunk_text(text, max_chars=301, overlap=0)

    assert all(len(chunk) <= 301 for chunk in chunks)
    assert all(not unicodedata.combining(chunk[0]) for chunk in chunks)
    assert "".join(chunks) == text


@settings(database=None)
@given(
    st.text(alphabet=st.sampled_from("ab 。.\n我的"), min_size=0, max_size=2000),
    st.integers(min_value=10, max_value=300),
    st.integers(min_value=0, max_value=9),
)
def test_chunk_text_never_exceeds_max_chars(text: str, max_chars: int, overlap: int) -> None:
    chunks = chunk_text(text, max_chars=max_chars, overlap=overlap)

    assert all(0 < len(chunk) <= max_chars for chunk in chunks)
    assert bool(chunks) == bool(text.strip())
