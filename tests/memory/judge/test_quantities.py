"""The number rule of the dispositions: which numbers count or measure something (and so make a suspect when they
change), and which are parts of dates, times, versions, identifiers or ratios (compared as key tokens only)."""

from __future__ import annotations

from memory.judge.dispositions import Neighbour, dispose, quantities, quantity_changes


def test_counts_and_measures_are_found_and_dates_versions_and_identifiers_are_not() -> None:
    found = quantities("On 2026-05-01 at 10:30 eu-west-1 v1.2 p95 3/4 had 16GB, 30 days, replicas: 3 and 40% of it")
    assert found == {"after gb": {"16"}, "after days": {"30"}, "before repli": {"3"}, "after %": {"40"}}
    assert quantity_changes("我们有6个数据节点", "我们有3个数据节点") == [("个数据节点", "3", "6")]
    assert quantity_changes("Our search cluster runs 3 data nodes.", "The search cluster runs 3 data nodes.") == []
    assert quantity_changes("Deployed on 2026-05-02.", "Deployed on 2026-05-01.") == []


def test_a_changed_count_is_a_suspect_from_the_quantity_floor_only() -> None:
    old = Neighbour(id=1, kind="fact", content="The cluster runs 3 data nodes.", placard="", similarity=0.92)
    other = Neighbour(id=2, kind="fact", content="The cluster runs on Debian.", placard="", similarity=0.92)
    new = "The cluster runs 6 data nodes."
    bands = {"merge_similarity": 0.97, "contradiction_similarity": 0.95}
    found = dispose(content=new, kind="fact", neighbours=[old, other], quantity_similarity=0.88, **bands)
    assert found.contradicts == (old,)
    assert dispose(content=new, kind="fact", neighbours=[old], **bands).disposition == "accept"  # no floor given
    assert dispose(content=new, kind="fact", neighbours=[old], quantity_similarity=0.93, **bands).disposition == (
        "accept"
    )  # below the floor
