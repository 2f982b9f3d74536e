"""Text helpers for the write pipeline and retrieval: CJK search text, low-entropy test, token estimate, cutting.

Everything here is pure (no Django, no settings): thresholds are keyword arguments whose defaults come from the
dsh-engram seed where it gives numbers, and from the reasoning in each docstring where it does not.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator

__all__ = [
    "chunk_text",
    "estimate_tokens",
    "is_low_entropy",
    "query_text_cjk",
    "search_text_cjk",
    "truncate_to_chars",
]

ELLIPSIS = "…"

# Ideographs (URO, extensions A-H, compatibility), kana, bopomofo and hangul: scripts written without spaces
# between words, which PostgreSQL's parser would otherwise index as one giant "word" per run.
_CJK_CLASS = (
    "\u1100-\u11ff"  # hangul jamo
    "\u2e80-\u2fdf"  # CJK and Kangxi radicals
    "\u3005-\u3007"  # 々 〆 〇
    "\u3040-\u30fa\u30fc-\u30ff"  # hiragana, katakana (without the ・ middle dot, which is punctuation)
    "\u3100-\u318f"  # bopomofo, hangul compatibility jamo
    "\u31a0-\u31bf\u31f0-\u31ff"  # bopomofo extended, katakana phonetic extensions
    "\u3400-\u4dbf\u4e00-\u9fff"  # ideographs: extension A, unified
    "\ua960-\ua97f\uac00-\ud7ff"  # hangul jamo extended, syllables
    "\uf900-\ufaff"  # compatibility ideographs
    "\uff66-\uff9f"  # half-width katakana
    "\U00020000-\U000323af"  # ideographs: extensions B-H
)
_CJK_RUN = re.compile(f"([{_CJK_CLASS}]+)")
_CJK_CHAR = re.compile(f"[{_CJK_CLASS}]")
# Full-width punctuation and CJK symbols cost about as much as an ideograph in a tokenizer.
_WIDE_CHAR = re.compile(f"[{_CJK_CLASS}\u3000-\u303f\uff00-\uff65\uffe0-\uffef]")


def _is_cjk(ch: str) -> bool:
    return _CJK_CHAR.match(ch) is not None


# --- full-text search --------------------------------------------------------------------------------------------


def _bigrams(run: str) -> str:
    if len(run) == 1:
        return run
    return " ".join(run[i : i + 2] for i in range(len(run) - 1))


def _blank_wide_punctuation(segment: str) -> str:
    """Turn non-ASCII punctuation, symbols and odd spaces into spaces.

    Under a "C" collation PostgreSQL's parser treats every non-ASCII character as a letter, so a stray "。" or
    "—" would glue itself to the neighbouring word. ASCII punctuation is left for the parser, which understands
    e-mail addresses, paths, versions and URLs.
    """
    return "".join(" " if ord(ch) > 0x7F and unicodedata.category(ch)[0] in "PSZC" else ch for ch in segment)


def _cjk_tokens(text: str) -> str:
    normalized = unicodedata.normalize("NFKC", text).lower()
    pieces: list[str] = []
    for index, segment in enumerate(_CJK_RUN.split(normalized)):
        # re.split with one capturing group alternates: non-CJK at even indexes, CJK runs at odd ones.
        pieces.append(_bigrams(segment) if index % 2 else _blank_wide_punctuation(segment))
    return " ".join(" ".join(pieces).split())


def search_text_cjk(text: str) -> str:
    """Text to store for ``to_tsvector('simple', ...)``, with CJK runs turned into overlapping 2-grams.

    "我喜欢喝茶" becomes "我喜 喜欢 欢喝 喝茶", so a query for "喜欢" finds it although Chinese has no spaces. The
    text is NFKC-normalised (full-width Latin becomes ASCII) and lower-cased; a lone CJK character stays itself.

    The query side must go through :func:`query_text_cjk`, which applies the very same transform: lexemes only
    match when both sides were cut the same way. Change one, change both, and re-index stored rows.
    """
    return _cjk_tokens(text)


def query_text_cjk(text: str) -> str:
    """Query text for ``plainto_tsquery('simple', ...)`` / ``websearch_to_tsquery``, cut like :func:`search_text_cjk`.

    A one-character CJK query only matches one-character runs in stored text; the vector arm of the search
    covers that case.
    """
    return _cjk_tokens(text)


# --- token estimate --------------------------------------------------------------------------------------------


def estimate_tokens(text: str) -> float:
    """Estimate LLM tokens: CJK characters at 1.5 tokens each, everything else at 4 characters per token.

    This is the seed's rule (dsh-engram v0.7.5): plain ``len / 4`` undercounted Chinese by more than four times,
    and injections overran their budget. Full-width punctuation counts as CJK; it tokenizes like it.
    """
    wide = len(_WIDE_CHAR.findall(text))
    return wide * 1.5 + (len(text) - wide) / 4


# --- grapheme-safe cutting -------------------------------------------------------------------------------------


def _is_regional_indicator(ch: str) -> bool:
    return "\U0001f1e6" <= ch <= "\U0001f1ff"


def _extends_cluster(ch: str) -> bool:
    """Characters that belong to the cluster before them: combining marks, joiners, selectors, skin tones."""
    return (
        unicodedata.category(ch) in ("Mn", "Me", "Mc")
        or ch == "\u200d"
        or "\ufe00" <= ch <= "\ufe0f"
        or "\U0001f3fb" <= ch <= "\U0001f3ff"
        or "\U000e0020" <= ch <= "\U000e007f"
        or "\U000e0100" <= ch <= "\U000e01ef"
        or "\u1160" <= ch <= "\u11ff"  # hangul medial vowels and final consonants
    )


def _cluster_ends(text: str) -> Iterator[int]:
    """Yield the end offset of each user-perceived character (an approximation of UAX #29 clusters).

    It keeps together what a cut must never separate: a base and its combining accents, CR LF, emoji ZWJ
    sequences with their skin tones and variation selectors, and flag pairs.
    """
    i, length = 0, len(text)
    while i < length:
        j = i + 1
        pair = text[i : i + 2]
        if pair == "\r\n" or (len(pair) == 2 and all(_is_regional_indicator(ch) for ch in pair)):
            j += 1
        while j < length and (_extends_cluster(text[j]) or text[j - 1] == "\u200d"):
            j += 1
        yield j
        i = j


def _safe_cut(text: str, limit: int) -> int:
    """The largest cluster boundary at or before ``limit``."""
    cut = 0
    for end in _cluster_ends(text):
        if end > limit:
            break
        cut = end
    return cut


def truncate_to_chars(text: str, n: int) -> str:
    """Cut ``text`` to at most ``n`` characters, ellipsis included, never inside a user-perceived character.

    The "…" counts against ``n`` so that callers with a hard budget (a preview column, an injection budget) can
    trust the length. Text that already fits comes back unchanged; ``n <= 0`` gives an empty string.
    """
    if n <= 0:
        return ""
    if len(text) <= n:
        return text
    cut = _safe_cut(text, n - 1)
    return text[:cut].rstrip() + ELLIPSIS


# --- chunking for embeddings -----------------------------------------------------------------------------------

# Where a chunk may end, best first: a blank line, a line break, a sentence end (Latin punctuation needs a
# following space, so "3.14" and "v1.2" are not cut; CJK full stops need none).
_UNIT_END = re.compile(r"\n[ \t]*\n\s*|\n|(?<=[.!?;])[ \t]+|(?<=[。！？；…])[ \t]*")


def _units(text: str) -> list[str]:
    """Split into paragraphs/lines/sentences, each keeping its trailing whitespace, so that joining restores text."""
    units: list[str] = []
    start = 0
    for match in _UNIT_END.finditer(text):
        if match.end() > start:
            units.append(text[start : match.end()])
            start = match.end()
    if start < len(text):
        units.append(text[start:])
    return units


def _hard_split(unit: str, limit: int) -> Iterator[str]:
    """Split a sentence longer than ``limit``: at the last space in the window, else at a cluster boundary."""
    while len(unit) > limit:
        window = unit[: limit + 1]
        space = max(window.rfind(" "), window.rfind("\n"), window.rfind("\t"))
        cut = space + 1 if space >= limit // 2 else _safe_cut(unit, limit)
        if cut == 0:  # a single cluster longer than the limit (pathological combining-mark pile): cut anyway
            cut = limit
        yield unit[:cut]
        unit = unit[cut:]
    if unit:
        yield unit


def _overlap_tail(chunk: str, overlap: int) -> str:
    """The last ``overlap`` characters of ``chunk``, moved forward to the first sentence start inside them, else
    to the first word start, so the copied context does not begin mid-word."""
    if overlap <= 0:
        return ""
    start = max(len(chunk) - overlap, 0)
    if start > 0 and not chunk[start - 1].isspace():
        tail = chunk[start:]
        boundary = _UNIT_END.search(tail) or re.search(r"\s+", tail)
        if boundary is not None and 0 < boundary.end() < len(tail):
            start += boundary.end()
    while start < len(chunk) and _extends_cluster(chunk[start]):
        start += 1
    return chunk[start:]


def chunk_text(text: str, *, max_chars: int = 1500, overlap: int = 100) -> list[str]:
    """Split a long text into pieces of at most ``max_chars`` for embedding.

    1. Cut the text into paragraphs, lines and sentences; a sentence longer than ``max_chars - overlap`` is
       split at a space, or at a character boundary for unspaced scripts.
    2. Pack those units greedily into chunks.
    3. Start each chunk after the first with up to ``overlap`` characters from the end of the previous one, so a
       fact that straddles a boundary is still whole in one of the two vectors.

    Text that fits in one chunk comes back as a one-element list; blank text gives ``[]``.
    """
    if max_chars <= 0:
        raise ValueError("max_chars must be positive")
    if not 0 <= overlap < max_chars:
        raise ValueError("overlap must be >= 0 and smaller than max_chars")
    text = text.strip()
    if not text:
        return []
    if len(text) <= max_chars:
        return [text]
    pieces = [piece for unit in _units(text) for piece in _hard_split(unit, max_chars - overlap)]
    chunks: list[str] = []
    current = ""
    fresh = False  # whether ``current`` holds anything beyond the overlap copied from the previous chunk
    for piece in pieces:
        if fresh and len(current) + len(piece) > max_chars:
            chunks.append(current)
            current = _overlap_tail(current, overlap)
        current += piece
        fresh = True
    chunks.append(current)
    return [chunk.strip() for chunk in chunks if chunk.strip()]


# --- low-entropy content ---------------------------------------------------------------------------------------

# Contentless replies, compared with spaces and punctuation removed, so "got it!" is "gotit". A text made only
# of these words ("ok thanks", "好的谢谢") is an acknowledgement, not a memory.
_ACKNOWLEDGEMENTS = frozenset(
    {
        # English
        "ok", "okay", "okey", "kk", "kthx", "thanks", "thank", "thankyou", "thx", "ty", "tysm", "cheers",
        "lol", "lmao", "rofl", "haha", "hehe", "heh", "hah", "xd", "yes", "yeah", "yep", "yup", "ya", "no",
        "nope", "nah", "sure", "surething", "cool", "nice", "great", "good", "fine", "done", "gotit", "gotcha",
        "roger", "noted", "ack", "lgtm", "hi", "hello", "hey", "bye", "hmm", "hm", "mm", "ah", "oh", "wow",
        "np", "noproblem", "welcome", "yourewelcome", "perfect", "awesome", "alright", "willdo", "soundsgood",
        "makessense", "please", "pls", "test", "testing",
        # Chinese
        "好", "好的", "好滴", "好吧", "嗯", "嗯嗯", "哦", "噢", "喔", "啊", "哈", "哈哈", "嘿嘿", "呵呵", "嘻嘻",
        "谢谢", "谢谢你", "谢了", "多谢", "感谢", "收到", "了解", "明白", "知道", "知道了", "行", "行吧", "可以",
        "没问题", "对", "对的", "是", "是的", "了", "啦", "吧", "呀", "你好", "在吗", "好嘞", "ok了",
        # Japanese, Korean
        "はい", "うん", "ありがとう", "了解です", "네", "예", "감사합니다", "고마워",
    }
)  # fmt: skip
_ACK_MAX_LEN = 48  # anything longer is not "just an acknowledgement"; also bounds the segmentation below
_ACK_LONGEST_WORD = max(len(word) for word in _ACKNOWLEDGEMENTS)
_CJK_WEIGHT = 3


def _repeat_unit(token: str) -> str:
    """The shortest string whose repetition gives ``token``: "hahaha" -> "ha", "哈哈哈" -> "哈"."""
    length = len(token)
    for size in range(1, length // 2 + 1):
        if length % size == 0 and token[:size] * (length // size) == token:
            return token[:size]
    return token


def _is_acknowledgement(content: str) -> bool:
    """True when ``content`` can be cut entirely into acknowledgement words (word-break dynamic programming)."""
    if not content or len(content) > _ACK_MAX_LEN:
        return False
    reachable = [True] + [False] * len(content)
    for end in range(1, len(content) + 1):
        reachable[end] = any(
            reachable[start] and content[start:end] in _ACKNOWLEDGEMENTS
            for start in range(max(0, end - _ACK_LONGEST_WORD), end)
        )
    return reachable[-1]


def _shannon_bits(content: str) -> float:
    counts = Counter(content)
    total = len(content)
    return -sum(c / total * math.log2(c / total) for c in counts.values())


def is_low_entropy(
    text: str,
    *,
    min_chars: int = 8,
    min_unique_ratio: float = 0.1,
    min_entropy_bits: float = 1.5,
) -> bool:
    """True for content that carries no information and should be dropped rather than remembered.

    The text is reduced to its *distinct content*: NFKC, lower case, letters and digits only, each
    whitespace-separated token collapsed to its repeating unit ("hahaha" -> "ha"), repeated tokens counted
    once. Then any of these makes it low-entropy:

    1. nothing is left (blank, punctuation, emoji);
    2. what is left is shorter than ``min_chars``, where a CJK character counts 3 (one ideograph carries about
       a short word's worth: "喜欢茶" counts like a 9-letter phrase, while "好的" stays short). At 8, short
       real memories such as "Prefers tabs", "dark mode", "喜欢喝茶" pass, "ok", "lol", "test" do not;
    3. it is made only of acknowledgement words ("ok thanks", "got it", "好的谢谢");
    4. it is at least ``min_chars`` characters long yet its character entropy is below ``min_entropy_bits``.
       Ordinary prose is near 4 bits per character; below 1.5 bits a text is about as predictable as one drawn
       from fewer than three symbols ("aaaaaab", "1000000"). Shorter texts are not judged this way because a
       handful of characters cannot show their distribution (a 4-ideograph phrase tops out at 2 bits);
    5. it has 4+ tokens and fewer than ``min_unique_ratio`` of them are distinct: at the default 0.1, nine
       tokens in ten repeat an earlier one, which is a stuck loop, not a note. The ratio is kept low because
       real text repeats words too (prose of a few hundred words is still around 0.4-0.5).
    """
    normalized = unicodedata.normalize("NFKC", text).lower()
    tokens = ["".join(ch for ch in raw if ch.isalnum()) for raw in normalized.split()]
    tokens = [token for token in tokens if token]
    units = list(dict.fromkeys(_repeat_unit(token) for token in tokens))
    content = "".join(units)
    if not content:
        return True
    weighted = sum(_CJK_WEIGHT if _is_cjk(ch) else 1 for ch in content)
    if weighted < min_chars:
        return True
    if _is_acknowledgement(content):
        return True
    if len(content) >= min_chars and _shannon_bits(content) < min_entropy_bits:
        return True
    return len(tokens) >= 4 and len(set(tokens)) / len(tokens) < min_unique_ratio
