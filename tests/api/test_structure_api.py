"""REST /api/v1/palaces/{id}/rooms|slots|tour|neighbours|refurb and /api/v1/stats: shapes, stored state,
query counts, and isolation (an outsider gets 404, with alice as the positive control in the same test)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memory.models import Edge, Memory
from memory.providers import embed_passages
from palace.models import OpLog, Palace, Room
from tests.fakes.memories import make_memory

Get = Callable[..., Any]


@pytest.fixture
def as_user(
    client_for: Any, token_for: Callable[..., str], bearer: Callable[..., dict[str, str]]
) -> Callable[..., Any]:
    """A bearer-authenticated client for `user` (scope write unless asked)."""

    def make(user: Any, scope: str = "write") -> Any:
        client = client_for(user)
        headers = bearer(token_for(user, scope=scope))

        class C:
            def get(self, path: str, **kw: Any) -> Any:
                return client.get(path, **kw, **headers)

            def patch(self, path: str, data: Any) -> Any:
                return client.patch(path, data, content_type="application/json", **headers)

            def post(self, path: str, data: Any) -> Any:
                return client.post(path, data, content_type="application/json", **headers)

        return C()

    return make


@pytest.fixture
def filled(project: Palace) -> list[Memory]:
    made = [make_memory(project, content=f"fact {i}", placard="Same placard") for i in range(8)]
    made.append(make_memory(project, content="a skill", kind="skill", placard="Bisect 2026-11"))
    return made


def test_rooms_directory_outsider_404_alice_sees_it(
    as_user: Any, alice: Any, charlie: Any, project: Palace, filled: list[Memory]
) -> None:
    url = f"/api/v1/palaces/{project.pk}/rooms"
    assert as_user(charlie).get(url).status_code == 404
    r = as_user(alice).get(url)
    assert r.status_code == 200, r.content
    assert [(x["name"], x["slots_used"], x["active"], x["latest_placard"]) for x in r.json()] == [
        ("Fact Hall", 8, 8, "Same placard"),
        ("Skill Workshop", 1, 1, "Bisect 2026-11"),
    ]


def test_viewer_reads_structure_but_cannot_rename(
    as_user: Any, alice: Any, bob: Any, charlie: Any, project: Palace, filled: list[Memory]
) -> None:
    room = Room.objects.get(palace=project, kind="fact")
    url = f"/api/v1/palaces/{project.pk}/rooms/{room.pk}"
    assert as_user(bob).get(f"/api/v1/palaces/{project.pk}/rooms").status_code == 200
    assert as_user(bob).patch(url, {"name": "Infra"}).status_code == 403
    assert as_user(charlie).patch(url, {"name": "Infra"}).status_code == 404
    assert as_user(alice, scope="read").patch(url, {"name": "Infra"}).status_code == 403
    r = as_user(alice).patch(url, {"name": "Infra"})
    assert r.status_code == 200, r.content
    assert r.json()["name"] == "Infra"
    room.refresh_from_db()
    assert room.name == "Infra"
    assert OpLog.objects.filter(op="room.rename", target_id=room.pk).count() == 1


def test_rename_rejects_bad_names_and_duplicates(
    as_user: Any, alice: Any, project: Palace, filled: list[Memory]
) -> None:
    fact = Room.objects.get(palace=project, kind="fact")
    url = f"/api/v1/palaces/{project.pk}/rooms/{fact.pk}"
    for bad in ({"name": ""}, {"name": "a#b"}, {"name": "x" * 200}, {"nom": "x"}):
        r = as_user(alice).patch(url, bad)
        assert r.status_code == 422, (bad, r.content)
        assert r.json()["error"]["message"]
    r = as_user(alice).patch(url, {"name": "Skill Workshop"})
    assert r.status_code == 409
    fact.refresh_from_db()
    assert fact.name == "Fact Hall"


def test_slots_list_in_tour_order_with_room_filter(
    as_user: Any, alice: Any, charlie: Any, project: Palace, filled: list[Memory], django_assert_max_num_queries: Any
) -> None:
    url = f"/api/v1/palaces/{project.pk}/slots"
    assert as_user(charlie).get(url).status_code == 404
    client = as_user(alice)
    with django_assert_max_num_queries(8):
        r = client.get(url)
    assert r.status_code == 200
    body = r.json()["items"]
    assert r.json()["next_cursor"] is None
    assert [s["coordinate"] for s in body][:2] == ["Fact Hall#1", "Fact Hall#2"]
    assert body[-1]["coordinate"] == "Skill Workshop#1"
    assert [s["seq"] for s in body] == list(range(1, 10))
    assert body[0]["memory"]["id"] == filled[0].pk
    r = client.get(url, data={"room": "Skill Workshop"})
    assert [s["coordinate"] for s in r.json()["items"]] == ["Skill Workshop#1"]
    assert client.get(url, data={"room": "Nowhere"}).status_code == 404


def test_slots_come_a_page_at_a_time(
    as_user: Any, alice: Any, charlie: Any, project: Palace, filled: list[Memory], django_assert_max_num_queries: Any
) -> None:
    url = f"/api/v1/palaces/{project.pk}/slots"
    client = as_user(alice)
    seen: list[int] = []
    cursor = None
    pages = 0
    while True:
        with django_assert_max_num_queries(8):
            r = client.get(url, data={"limit": 4, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200, r.content
        assert len(r.json()["items"]) <= 4
        seen += [s["seq"] for s in r.json()["items"]]
        pages += 1
        cursor = r.json()["next_cursor"]
        if cursor is None:
            break
    assert seen == list(range(1, 10)) and pages == 3
    first = client.get(url, data={"limit": 4}).json()
    assert as_user(charlie).get(url, data={"cursor": first["next_cursor"]}).status_code == 404
    assert client.get(url, data={"limit": 201}).status_code == 422
    assert client.get(url, data={"limit": 0}).status_code == 422
    for bad in ["1e30.1", "²", "x" * 500, first["next_cursor"] + "AAAA"]:
        r = client.get(url, data={"cursor": bad})
        assert r.status_code == 422 and "cursor" in r.json()["error"]["message"], r.content


def test_fixed_tour(
    as_user: Any, alice: Any, charlie: Any, project: Palace, filled: list[Memory], django_assert_max_num_queries: Any
) -> None:
    url = f"/api/v1/palaces/{project.pk}/tour"
    assert as_user(charlie).get(url).status_code == 404
    client = as_user(alice)
    with django_assert_max_num_queries(8):
        r = client.get(url, data={"mode": "fixed", "limit": 3, "offset": 1})
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["mode"] == "fixed"
    assert body["total"] == 9
    assert [s["seq"] for s in body["stops"]] == [2, 3, 4]
    assert as_user(alice).get(url, data={"limit": 0}).status_code == 422


def test_thematic_tour(as_user: Any, alice: Any, charlie: Any, project: Palace) -> None:
    texts = [
        "Nightly database backups run at 02:00 with pg_dump.",
        "Backups are restored weekly to verify them.",
        "The coffee machine is on floor three.",
        "Backup retention is thirty days.",
    ]
    for text, vector in zip(texts, embed_passages(texts), strict=True):
        make_memory(project, content=text, embedding=vector)
    url = f"/api/v1/palaces/{project.pk}/tour"
    params = {"mode": "thematic", "theme": "database backups", "stops": 3}
    assert as_user(charlie).get(url, data=params).status_code == 404
    r = as_user(alice).get(url, data=params)
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["mode"] == "thematic"
    assert body["search_mode"] == "hybrid"
    assert len(body["stops"]) == 3
    assert "coffee" not in " ".join(s["memory"]["content"] for s in body["stops"])
    seqs = [s["seq"] for s in body["stops"]]
    assert seqs == sorted(seqs)
    for bad in ({"mode": "thematic", "theme": "x", "stops": 2}, {"mode": "thematic", "stops": 3}, {"mode": "spiral"}):
        r = as_user(alice).get(url, data=bad)
        assert r.status_code == 422, (bad, r.content)


def test_neighbours(as_user: Any, alice: Any, charlie: Any, project: Palace, alice_personal: Palace) -> None:
    a, b, c = (make_memory(project, content=x) for x in "abc")
    Edge.objects.create(palace=project, from_memory=a, to_memory=b, kind="supports")
    Edge.objects.create(palace=project, from_memory=b, to_memory=c, kind="related")
    url = f"/api/v1/palaces/{project.pk}/neighbours/{a.pk}"
    assert as_user(charlie).get(url).status_code == 404
    r = as_user(alice).get(url, data={"hops": 2})
    assert r.status_code == 200, r.content
    assert [(n["memory"]["id"], n["hops"], n["via"]) for n in r.json()["neighbours"]] == [
        (b.pk, 1, "supports"),
        (c.pk, 2, "related"),
    ]
    assert as_user(alice).get(url, data={"hops": 4}).status_code == 422
    # A memory of another palace, addressed through this one, is not found.
    other = make_memory(alice_personal)
    assert as_user(alice).get(f"/api/v1/palaces/{project.pk}/neighbours/{other.pk}").status_code == 404


def test_refurb_list(as_user: Any, alice: Any, charlie: Any, project: Palace, filled: list[Memory]) -> None:
    url = f"/api/v1/palaces/{project.pk}/refurb"
    assert as_user(charlie).get(url).status_code == 404
    r = as_user(alice).get(url)
    assert r.status_code == 200
    body = r.json()
    assert body["scanned"] is True
    assert body["active"] == 9
    assert {i["memory"] for i in body["items"]} == {m.pk for m in filled[:8]}
    assert all(i["score"] == 0.0 and "same placard" in i["hint"] for i in body["items"])


def test_refurb_list_of_a_small_palace_says_it_was_not_scanned(as_user: Any, alice: Any, project: Palace) -> None:
    make_memory(project, placard="dup")
    make_memory(project, placard="dup")
    body = as_user(alice).get(f"/api/v1/palaces/{project.pk}/refurb").json()
    assert body["scanned"] is False
    assert "fewer than 8" in body["reason"]


def test_stats(as_user: Any, alice: Any, charlie: Any, project: Palace, filled: list[Memory]) -> None:
    filled[0].hit_count = 2
    filled[0].save()
    make_memory(project, status="forgotten")
    make_memory(project, review_enrolled=True)
    assert as_user(charlie).get("/api/v1/stats", data={"palace": project.pk}).status_code == 404
    assert (
        as_user(charlie).get("/api/v1/stats", data={"project": "https://github.com/atrium-test/demo"}).status_code
        == 404
    )
    r = as_user(alice).get("/api/v1/stats", data={"project": "https://github.com/atrium-test/demo"})
    assert r.status_code == 200, r.content
    s = r.json()
    assert s["palace_id"] == project.pk
    assert s["total"] == 11
    assert s["by_status"]["active"] == 10 and s["by_status"]["forgotten"] == 1
    assert s["by_kind"] == {"fact": 9, "preference": 0, "decision": 0, "episode": 0, "skill": 1}
    assert s["without_vector"] == 10
    assert s["review_enrolled"] == 1
    assert s["review_due"] == 1
    assert s["signal_ratio"] == 0.1
    assert [room["name"] for room in s["rooms"]] == ["Fact Hall", "Fact Hall-2", "Skill Workshop"]


def test_stats_of_an_empty_palace_say_unknown_not_zero(as_user: Any, alice: Any) -> None:
    s = as_user(alice).get("/api/v1/stats").json()
    assert s["total"] == 0
    assert s["signal_ratio"] is None
    assert s["signal_reason"].startswith("unknown")


@pytest.fixture
def alice_personal(alice: Any) -> Palace:
    return Palace.objects.get(personal_owner=alice)
