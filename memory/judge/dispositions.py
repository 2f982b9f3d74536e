"""Deciding what a new memory is relative to its nearest neighbours: a restatement, a suspected contradiction,
or something new. Pure functions: no ORM, no settings, so the rule is testable on its own.

Cosine similarity alone cannot tell "the API listens on port 8000" from "... port 8001" (e5 puts them at ~0.98),
so a merge also needs the two texts to agree on their *key tokens*: numbers, identifiers, names and negations.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

ACCEPT = "accept"
MERGE = "merge"
DEFER = "defer"
DROP = "drop"

# Words (Latin, digits, identifiers such as eu-west-1, db.internal, v1.2; a CJK run is one token).
_TOKEN = re.compile(r"[^\W_](?:[\w.\-/:@']*[^\W_])?", re.UNICODE)
_SENTENCE_ENDS = frozenset(".!?。！？")
_NEGATIONS = frozenset(
    {
        "not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without", "cannot",
        "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "weren't", "won't", "wouldn't", "can't",
        "couldn't", "shouldn't", "haven't", "hasn't", "hadn't", "mustn't", "dont", "doesnt", "didnt", "isnt",
        "cant", "wont", "nicht", "kein", "keine", "nie", "pas", "jamais",
    }
)  # fmt: skip
_CJK_NEGATIONS = frozenset("不没沒别別未非无無勿莫")
# Ideographs that carry grammar rather than content: a restatement may add or drop these freely.
_CJK_FUNCTION = frozenset("的了是在也都就很还和与及或而着过吗呢吧啊呀把被让给对从向这那个些之其所以为于")
_CJK_IDEOGRAPH = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


# Words that carry no claim of their own; a restatement may add these freely.
_STOPWORDS_TEXT = """a an the and or but so if then than that this these those there here is are was were be
    been being am
    do does did done have has had having i me my mine you your yours he him his she her hers it its we us our
    they them their what which who whom whose when where why how all any both each few more most other some
    such only own same too very just also really now still yet again ever even much many lot lots of in on at
    by for with about against between into through during before after above below to from up down out off
    over under as until while can could will would shall should may might must get got gets going gonna wanna
    yeah yes yep oh wow hey hi hello ok okay thanks thank well like one ones thing things something anything
    it's i'm i've i'll i'd you're you've you'll that's what's let's there's it'll don't can't won't"""
_STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
MAX_NOVEL_WORDS = 2
STEM_CHARS = 5


@dataclass(frozen=True)
class Neighbour:
    """A candidate from the same palace: its id, kind, texts and cosine similarity to the new memory."""

    id: int
    kind: str
    content: str
    placard: str
    similarity: float
    speaker: str = ""


@dataclass(frozen=True)
class Disposition:
    disposition: str  # accept | merge | defer
    merge_into: Neighbour | None = None
    contradicts: tuple[Neighbour, ...] = ()


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


@functools.lru_cache(maxsize=1024)
def _tokens(text: str) -> tuple[tuple[str, bool], ...]:
    """(token, starts_a_sentence) pairs: a token starts a sentence when only whitespace, or a sentence end and
    whitespace, comes before it. Cached: a save reads its text and each neighbour's several times (restatement,
    quantities, negations, the ruling's reason), and a chunk's neighbours repeat. Linear in the text (the prefix
    before each token was copied and stripped: quadratic in a long episode)."""
    out: list[tuple[str, bool]] = []
    text = _normalise(text)
    for match in _TOKEN.finditer(text):
        end = match.start()
        while end and text[end - 1].isspace():
            end -= 1
        out.append((match.group(0), end == 0 or text[end - 1] in _SENTENCE_ENDS))
    return tuple(out)


def _is_key(token: str, sentence_start: bool) -> bool:
    """A token a restatement must keep: a number, an identifier, or a capitalised name mid-sentence."""
    if any(ch.isdigit() for ch in token):
        return True
    if any(ch in ".-/:@_" for ch in token):
        return True
    return not sentence_start and any(ch.isupper() for ch in token)


def key_tokens(text: str) -> set[str]:
    return {tok.lower() for tok, start in _tokens(text) if _is_key(tok, start)}


def negations(text: str) -> set[str]:
    words = {tok.lower().replace("’", "'") for tok, _ in _tokens(text)}
    found = {w for w in words if w in _NEGATIONS or w.endswith("n't")}
    found |= {ch for ch in _normalise(text) if ch in _CJK_NEGATIONS}
    return found


def cjk_content(text: str) -> set[str]:
    return {ch for ch in _CJK_IDEOGRAPH.findall(_normalise(text)) if ch not in _CJK_FUNCTION}


def _stems(text: str) -> set[str]:
    """Crude stems of the content words ("allergic"/"allergy" → "aller", "peanuts"/"peanut" → "peanu")."""
    words = (tok.lower().replace("’", "'") for tok, _ in _tokens(text))
    return {w[:STEM_CHARS] for w in words if len(w) > 2 and w not in _STOPWORDS and not w.isdigit()}


def novel_words(new: str, old: str) -> set[str]:
    """Content-word stems of `new` that `old` does not have: what a merge of `new` into `old` would lose."""
    return _stems(new) - _stems(old)


# A number and the word it counts or measures ("3 data nodes", "30 days", "16GB", "port 8000", "3台服务器"): e5 rates
# a sentence and its copy with one small number changed at 0.92-0.94, below the contradiction band, so a changed
# quantity is a suspect from a lower floor (`dispose`). Not a number inside an identifier, a date, a time, a version
# or a ratio (eu-west-1, 2026-05-01, 10:30, v1.2, p95, 3/4): those are key tokens, compared in the band as before.
_QUANTITY = re.compile(
    r"(?<![A-Za-z0-9_.\-/:#])(\d+(?:[.,]\d+)?)(?![\d.,]?\d|[\-/:]\w)\s*(%|[A-Za-z]+|[\u3400-\u9fff]{1,5})?"
)
_WORD_BEFORE = re.compile(r"([A-Za-z]+)\s*[:=]?\s*$")


def quantities(text: str) -> dict[str, set[str]]:
    """What each counted or measured thing of `text` is given as: {"after data": {"3"}, "before port": {"8000"}}."""
    text = _normalise(text)
    found: dict[str, set[str]] = {}
    for match in _QUANTITY.finditer(text):
        number, unit = match.group(1).replace(",", "."), (match.group(2) or "").lower()
        if unit and unit not in _STOPWORDS:
            found.setdefault("after " + unit[:STEM_CHARS], set()).add(number)
        before = _WORD_BEFORE.search(text[: match.start()])
        if before and before.group(1).lower() not in _STOPWORDS:
            found.setdefault("before " + before.group(1).lower()[:STEM_CHARS], set()).add(number)
    return found


def _wording(text: str) -> set[str]:
    """The content-word stems of `text` without its numbers (and CJK content ideographs): what stays when only a
    count changes."""
    words = (tok.lower() for tok, _ in _tokens(text) if not any(ch.isdigit() for ch in tok))
    return {w[:STEM_CHARS] for w in words if len(w) > 2 and w not in _STOPWORDS} | cjk_content(re.sub(r"\d", "", text))


def quantity_changes(new: str, old: str) -> list[tuple[str, str, str]]:
    """(thing, old numbers, new numbers) for each thing both texts count or measure with different numbers, when
    the rest of their wording is the same: "The production API listens on port 8000" / "The staging API … port
    9000" are two things, "runs 3 data nodes" / "runs 6 data nodes" one thing changed."""
    if _wording(new) != _wording(old):
        return []
    a, b = quantities(new), quantities(old)
    return [
        (key.split(" ", 1)[1], "/".join(sorted(b[key])), "/".join(sorted(a[key])))
        for key in sorted(a.keys() & b.keys())
        if a[key] != b[key]
    ]


def is_restatement(a: str, b: str) -> bool:
    """True when `b` says nothing `a` does not (and vice versa) as far as key tokens and negation go.

    Every key token of one text must appear (case-insensitively) among the words of the other, so "Caroline
    went to the group" restates "Yesterday Caroline attended the group" (Caroline is sentence-initial in one),
    while "Thanks, Caroline!" does not restate "Thanks, Melanie!" and "port 8000" does not restate "port 8001".
    A negation on one side only ("is allergic" / "is not allergic") also breaks it. Chinese has no spaces and
    no capitals, and e5 rates "喜欢喝绿茶" / "喜欢喝红茶" at 0.98, so for ideographs the rule is stricter: both
    texts must use the same content ideographs (grammar particles aside). A Chinese paraphrase with other words
    is then not merged but deferred for a person, the safe side of the trade.
    """
    words_a = {tok.lower() for tok, _ in _tokens(a)}
    words_b = {tok.lower() for tok, _ in _tokens(b)}
    if not key_tokens(a) <= words_b or not key_tokens(b) <= words_a:
        return False
    if cjk_content(a) != cjk_content(b):
        return False
    return negations(a) == negations(b)


def dispose(
    *,
    content: str,
    kind: str,
    neighbours: list[Neighbour],
    speaker: str = "",
    merge_similarity: float,
    contradiction_similarity: float,
    max_contradictions: int = 3,
    max_novel_words: int = MAX_NOVEL_WORDS,
    quantity_similarity: float | None = None,
) -> Disposition:
    """Apply the four-state rule (minus DROP, decided before embedding) to neighbours sorted by similarity.

    1. The most similar neighbour of the same kind (and speaker) at >= `merge_similarity` that is a lexical
       restatement and to which the new text adds at most `max_novel_words` content words → MERGE. A merge
       keeps the old text, so a "restatement" that adds detail ("... with my paintings") must not be merged
       away. Two people saying the same thing are two memories.
    2. Neighbours at >= `contradiction_similarity` that are not restatements → DEFER with those candidates.
       (A restatement of a different kind is neither: it is a different kind of memory about the same thing.)
       From `quantity_similarity` up (when given), also the neighbours that give the same counted or measured
       thing another number ("3 data nodes" / "6 data nodes", `quantity_changes`).
    3. Otherwise ACCEPT.
    """
    ordered = sorted(neighbours, key=lambda n: -n.similarity)
    for n in ordered:
        if n.similarity < merge_similarity:
            break
        if (
            n.kind == kind
            and n.speaker.casefold() == speaker.casefold()
            and is_restatement(content, n.content)
            and len(novel_words(content, n.content)) <= max_novel_words
        ):
            return Disposition(MERGE, merge_into=n)
    floor = contradiction_similarity
    if quantity_similarity is not None:
        floor = min(quantity_similarity, contradiction_similarity)
    suspects = tuple(
        n
        for n in ordered
        if n.similarity >= floor
        and not is_restatement(content, n.content)
        and (n.similarity >= contradiction_similarity or quantity_changes(content, n.content))
    )[:max_contradictions]
    if suspects:
        return Disposition(DEFER, contradicts=suspects)
    return Disposition(ACCEPT)
