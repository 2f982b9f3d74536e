"""memory.search.rank on hand-made candidates (no database): the floor, score-aware fusion, episode context, the
speaker cue, and the names a palace keeps mentioning (memory.knowledge.people)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory.knowledge.people import frequent_names
from memory.search.arms import Row
from memory.search.rank import (
    COSINE_SPREAD,
    EPISODE_SHARE,
    MIN_BACKGROUND,
    SEMANTIC_WEIGHT,
    apply_floor,
    floor_for,
    pool,
    rank,
)

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
LONG_AGO = NOW - timedelta(days=3650)  # no recency boost


def row(memory_id: int, *, cosine: float | None, lexical: float = 0.0, **kwargs: Any) -> Row:
    fields: dict[str, Any] = {
        "id": memory_id,
        "hit_count": 0,
        "touched": LONG_AGO,
        "speaker": "",
        "created_at": LONG_AGO + timedelta(days=memory_id),  # a day apart: separate episodes
        "episode": "",
        "author": 1,
        "cosine": cosine,
        "lexical": lexical,
    }
    fields.update(kwargs)
    return Row(**fields)


def test_fusion_weighs_scores_not_ranks() -> None:
    """Two one-arm candidates at rank 1 tie under RRF; by scores, the strong keyword match beats the weak
    semantic neighbour, and a candidate strong on both beats either."""
    lex_only = row(1, cosine=0.80, lexical=0.5)
    sem_only = row(2, cosine=0.81, lexical=0.0)
    both = row(3, cosine=0.85, lexical=0.4)
    found = pool({"lex": [lex_only, both], "sem": [both, sem_only]}, {})

    ranked = rank(found, edges=[], named=[], now=NOW)

    assert [c.memory_id for c in ranked] == [3, 1, 2]
    top = ranked[0]
    assert top.label == "sem#1 + lex#2"
    expected = SEMANTIC_WEIGHT * (0.85 - 0.80) / max(0.05, COSINE_SPREAD) + (1 - SEMANTIC_WEIGHT) * 0.4 / 0.5
    assert top.score == pytest.approx(expected)


def test_a_tiny_cosine_gap_in_a_small_pool_is_not_stretched_to_a_whole_unit() -> None:
    close = pool({"sem": [row(1, cosine=0.851), row(2, cosine=0.850)]}, {})

    ranked = rank(close, edges=[], named=[], now=NOW)

    assert ranked[0].score - ranked[1].score == pytest.approx(SEMANTIC_WEIGHT * 0.001 / COSINE_SPREAD)


def test_the_floor_drops_only_sub_floor_candidates_sharing_no_word() -> None:
    found = pool(
        {
            "sem": [row(1, cosine=0.86), row(2, cosine=0.79), row(3, cosine=0.70, lexical=0.1)],
            "lex": [row(3, cosine=None, lexical=0.1)],
        },
        {3: 0.70},
    )

    dropped = apply_floor(found, 0.80)

    assert dropped == 1
    assert sorted(found) == [1, 3]  # 2 is a sub-floor neighbour; 3 shares a word, whatever its cosine
    assert apply_floor(found, None) == 0  # no floor known for the embedder: nothing dropped


def test_episode_context_lifts_a_memory_saved_beside_a_strong_match() -> None:
    """Facts saved by one author minutes apart are one episode; the same fact saved a day later is not."""
    strong = row(1, cosine=0.90, lexical=1.0, created_at=NOW - timedelta(days=100))
    beside = row(2, cosine=0.82, created_at=NOW - timedelta(days=100) + timedelta(minutes=5))
    apart = row(3, cosine=0.82, created_at=NOW - timedelta(days=99))
    other_author = row(4, cosine=0.82, created_at=NOW - timedelta(days=100), author=2)
    found = pool({"sem": [strong, beside, apart, other_author], "lex": [strong]}, {})

    ranked = {c.memory_id: c for c in rank(found, edges=[], named=[], now=NOW)}

    strong_base = SEMANTIC_WEIGHT * (0.90 - 0.82) / COSINE_SPREAD + (1 - SEMANTIC_WEIGHT) * 1.0
    assert ranked[2].score == pytest.approx(ranked[3].score + EPISODE_SHARE * strong_base)
    assert ranked[3].score == pytest.approx(ranked[4].score)  # a day later, or another author: no lift


def test_a_source_session_is_an_episode_whenever_it_was_saved() -> None:
    first = row(1, cosine=0.90, lexical=1.0, episode="conv:3")
    later = row(2, cosine=0.82, episode="conv:3", created_at=NOW - timedelta(days=1))
    stranger = row(3, cosine=0.82, episode="conv:4", created_at=NOW - timedelta(days=1))

    ranked = [c.memory_id for c in rank(pool({"sem": [first, later, stranger]}, {}), edges=[], named=[], now=NOW)]

    assert ranked == [1, 2, 3]


def test_the_speaker_cue_needs_exactly_one_named_speaker() -> None:
    said = row(1, cosine=0.80, speaker="Melanie")
    other = row(2, cosine=0.81, speaker="Caroline")

    cued = rank(pool({"sem": [said, other]}, {}), edges=[], named=["Melanie"], now=NOW)
    both = rank(pool({"sem": [said, other]}, {}), edges=[], named=["Melanie", "Caroline"], now=NOW)

    assert [c.memory_id for c in cued] == [1, 2]
    assert [c.memory_id for c in both] == [2, 1]  # control: no cue, the closer one first


def test_edges_bring_a_neighbour_with_an_honest_label() -> None:
    question = row(1, cosine=0.90, lexical=1.0)
    answer = row(2, cosine=0.70)

    ranked = rank(pool({"lex": [question]}, {}), edges=[(answer, 1, "next")], named=[], now=NOW)

    assert [c.memory_id for c in ranked] == [1, 2]
    assert ranked[1].label == "edge:next from #1"


def test_names_a_palace_keeps_mentioning_are_found_by_capitalisation() -> None:
    texts = [
        "Caroline attended an LGBTQ support group.",
        "The support group made Caroline feel accepted on Friday.",
        "Melanie painted a lake sunrise.",
        "Painting helps Melanie relax after work.",
        "Caroline and Melanie met in May.",
        "Melanie runs on Fridays.",
        "We met Caroline at the Assistant's desk.",
        "the Assistant said hi. The Assistant left.",
    ]

    names = frequent_names(texts)

    assert names == ["Caroline", "Melanie"]  # not Friday (calendar), Painting/The (also lower case), Assistant (role)
    assert frequent_names(texts, min_count=5) == []  # each is in four texts


def test_the_floor_stands_above_the_background_or_falls_back_to_the_absolute_one(settings: Any) -> None:
    """Relative to the search's own background, because e5's cosines sit higher in Chinese than in English."""
    english = [0.74 + i * 0.005 for i in range(MIN_BACKGROUND + 1)]  # median 0.76
    chinese = [0.82 + i * 0.005 for i in range(MIN_BACKGROUND + 1)]  # median 0.84

    assert floor_for("multilingual-e5-small", background=english) == pytest.approx(0.82)
    assert floor_for("multilingual-e5-small", background=chinese) == pytest.approx(0.90)
    assert floor_for("multilingual-e5-small", background=english[:3]) == 0.80  # too few: the absolute floor
    assert floor_for("some-other-model", background=english) is None  # not calibrated: no floor, said as None
    settings.ATRIUM_SEARCH_FLOOR_MARGIN = 0.1
    settings.ATRIUM_SEARCH_FLOOR = 0.7
    assert floor_for("some-other-model", background=english) == pytest.approx(0.86)
    assert floor_for("some-other-model", background=[0.9]) == 0.7


def test_a_candidate_takes_a_share_of_its_best_neighbours_cosine() -> None:
    """An answer turn ("Yes, last week!") is far from the question on its own; the turn before it is close."""
    answer = row(1, cosine=0.78, lexical=0.2)
    other = row(2, cosine=0.80, lexical=0.2)
    question_turn = row(3, cosine=0.95)

    lifted = rank(pool({"lex": [answer, other]}, {}), edges=[(question_turn, 1, "next")], named=[], now=NOW)
    alone = rank(pool({"lex": [answer, other]}, {}), edges=[], named=[], now=NOW)

    assert [c.memory_id for c in alone][:2] == [2, 1]  # control: without the neighbour the closer one leads
    assert [c.memory_id for c in lifted][:2] == [1, 2]
    assert lifted[0].label == "lex#1"  # the answer keeps its own label; the neighbour joins by the edge
