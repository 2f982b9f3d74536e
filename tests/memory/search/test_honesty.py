"""memory.search says when nothing matched: the similarity floor, `matched`, and the labelled `overview` fallback.

The palace is the one from the issue: 16 unrelated team notes, and a search for "staging database", which none of
them is about. Memories are saved through the real write pipeline and embedded by the real e5 model.
"""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import AccessRecord, Memory, SearchBatch
from memory.search import SearchRequest, memory_search
from memory.search.overview import OVERVIEW_LABEL
from palace.errors import InvalidInput
from palace.models import Palace
from tests.fakes.team_notes import NOTES  # the issue's sixteen notes, shared with the doors' tests


def search(user: Any, query: str, reinforce: bool = False, register_batch: bool = False, **kwargs: Any) -> Any:
    return memory_search(
        user=user, request=SearchRequest(query=query, **kwargs), reinforce=reinforce, register_batch=register_batch
    )


@pytest.fixture
def sixteen(save: Any) -> dict[str, Memory]:
    saved = {}
    for content, kind in NOTES:
        result = save(content, kind=kind)
        assert result.disposition == "accept"
        saved[content] = result.memory
    return saved


def test_a_search_for_something_the_palace_does_not_hold_says_no_match(alice: Any, sixteen: Any) -> None:
    miss = search(alice, "staging database")
    hit = search(alice, "which font does the design system use")

    assert miss.matched is False
    assert miss.hits == []
    assert miss.mode == "hybrid" and miss.degraded == []  # both arms ran: this is a real answer, not a failure
    # The floor is the median cosine of the semantic candidates plus e5's margin: unrelated English notes sit near
    # 0.75, so it lands near 0.81.
    assert miss.floor is not None and 0.78 < miss.floor < 0.86 and miss.below_floor > 0
    # Positive control: a question the palace does answer.
    assert hit.matched is True
    assert hit.hits[0].memory.content == "The design system uses Inter as its body font"


def test_the_floor_only_drops_candidates_that_share_no_word(alice: Any, sixteen: Any, settings: Any) -> None:
    """A memory sharing a word with the query passes whatever its cosine; the rest need the floor."""
    settings.ATRIUM_SEARCH_FLOOR_MARGIN = 0.5  # nothing stands that far above the rest
    shared = search(alice, "rotate the staging keys")  # "rotate" is in one note

    assert shared.matched is True
    assert [h.memory.content for h in shared.hits] == ["Passwords rotate every 90 days"]
    assert all("lex" in h.ranks for h in shared.hits)


def test_without_the_embedder_a_miss_is_still_a_miss(alice: Any, sixteen: Any, embedder_down: None) -> None:
    miss = search(alice, "staging database")
    hit = search(alice, "green tea")

    assert miss.mode == "lexical" and miss.degraded == ["semantic"]
    assert miss.matched is False and miss.hits == [] and miss.floor is None
    assert hit.matched is True and hit.hits[0].memory.content == "Alice prefers green tea in the morning"


def test_overview_on_a_miss_is_labelled_overview_and_is_never_evidence(alice: Any, sixteen: Any) -> None:
    """The label cannot lie: every overview entry says "overview", none carries an arm rank, a ref or a batch
    handle, none is reinforced, and the hits stay empty."""
    first = Memory.objects.get(content="Bob's cat is called Miso")
    Memory.objects.filter(pk=first.pk).update(hit_count=9)
    batches, records = SearchBatch.objects.count(), AccessRecord.objects.count()

    miss = memory_search(user=alice, request=SearchRequest(query="staging database", fallback="overview"))

    assert miss.matched is False and miss.hits == [] and miss.batch is None
    overview = miss.overview
    assert overview is not None and overview.label == OVERVIEW_LABEL == "overview"
    assert overview.entries, "an overview of a palace of 16 memories lists some"
    assert {e.label for e in overview.entries} == {"overview"}
    assert all(not hasattr(e, "ref") and not hasattr(e, "ranks") for e in overview.entries)
    assert all("sem#" not in e.label and "lex#" not in e.label for e in overview.entries)
    whys = [e.why for e in overview.entries]
    assert whys[:5] == ["recent"] * 5 and "reinforced" in whys
    assert next(e.memory for e in overview.entries if e.why == "reinforced").pk == first.pk
    palace = Palace.objects.get(personal_owner=alice)
    kinds = {k.kind: k for k in overview.rooms[palace.pk]}
    assert kinds["fact"].memories == 10 and kinds["decision"].memories == 4
    # Nothing was registered as evidence or reinforced.
    assert SearchBatch.objects.count() == batches
    assert AccessRecord.objects.count() == records
    assert Memory.objects.get(pk=first.pk).hit_count == 9


def test_no_overview_on_a_match_or_unless_asked(alice: Any, sixteen: Any) -> None:
    matched = search(alice, "which font does the design system use", fallback="overview")
    unasked = search(alice, "staging database")

    assert matched.matched is True and matched.overview is None
    assert unasked.matched is False and unasked.overview is None


def test_an_unknown_fallback_is_refused(alice: Any, sixteen: Any) -> None:
    with pytest.raises(InvalidInput, match="fallback must be one of overview"):
        search(alice, "staging database", fallback="everything")


def test_an_outsiders_overview_never_shows_another_palace(alice: Any, charlie: Any, sixteen: Any) -> None:
    own = search(alice, "staging database", fallback="overview")
    outsider = search(charlie, "staging database", fallback="overview")

    assert own.overview is not None and own.overview.entries  # positive control
    assert outsider.overview is not None and outsider.overview.entries == []
    assert set(outsider.overview.rooms) == {Palace.objects.get(personal_owner=charlie).pk}
