"""REST /api/v1/review: queue (never the body), due count, reveal and grade — access for every persona."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import time_machine

from palace.models import OpLog, Palace
from review.models import ReviewCard
from tests.fakes.memories import T0, make_memory

BODY = "The VPN shared secret is rotated by Dana every quarter."


@pytest.fixture
def headers_for(token_for: Callable[..., str], bearer: Callable[..., dict[str, str]]) -> Callable[..., dict[str, str]]:
    return lambda user, scope="write": bearer(token_for(user, scope=scope))


@pytest.fixture
def due(project: Palace) -> Any:
    return make_memory(project, content=BODY, placard="VPN secret rota", review_enrolled=True)


@time_machine.travel(T0 + timedelta(days=3), tick=False)
def test_queue_lists_cues_never_the_body(
    client: Any,
    alice: Any,
    charlie: Any,
    headers_for: Any,
    project: Palace,
    due: Any,
    django_assert_max_num_queries: Any,
) -> None:
    r = client.get("/api/v1/review/queue", **headers_for(charlie))
    assert r.status_code == 200
    assert r.json() == {"count": 0, "items": []}
    assert client.get("/api/v1/review/queue", {"palace": project.pk}, **headers_for(charlie)).status_code == 404
    headers = headers_for(alice)
    with django_assert_max_num_queries(7):
        r = client.get("/api/v1/review/queue", {"palace": project.pk}, **headers)
    assert r.status_code == 200
    (item,) = r.json()["items"]
    assert item["memory"] == due.pk
    assert item["coordinate"] == "Fact Hall#1"
    assert item["placard"] == "VPN secret rota"
    assert item["days_overdue"] == 2
    assert "content" not in item
    assert "shared secret" not in r.content.decode()


@time_machine.travel(T0 + timedelta(days=3), tick=False)
def test_due_count(client: Any, alice: Any, bob: Any, charlie: Any, headers_for: Any, due: Any) -> None:
    assert client.get("/api/v1/review/due", **headers_for(charlie)).json() == {"due": 0}
    assert client.get("/api/v1/review/due", **headers_for(alice)).json() == {"due": 1}
    assert client.get("/api/v1/review/due", **headers_for(bob)).json() == {"due": 1}  # a viewer sees it too
    r = client.get("/api/v1/review/due", {"project": "https://github.com/atrium-test/demo"}, **headers_for(charlie))
    assert r.status_code == 404


def test_reveal_returns_the_body(client: Any, alice: Any, charlie: Any, headers_for: Any, due: Any) -> None:
    url = f"/api/v1/review/{due.pk}/reveal"
    assert client.get(url, **headers_for(charlie)).status_code == 404
    r = client.get(url, **headers_for(alice, scope="read"))
    assert r.status_code == 200
    assert r.json()["content"] == BODY
    assert r.json()["coordinate"] == "Fact Hall#1"


def test_grade_advances_the_schedule(
    client: Any, alice: Any, bob: Any, charlie: Any, headers_for: Any, due: Any
) -> None:
    url = f"/api/v1/review/{due.pk}/grade"

    def post(user: Any, data: Any, scope: str = "write") -> Any:
        return client.post(url, data, content_type="application/json", **headers_for(user, scope))

    assert post(charlie, {"grade": 5}).status_code == 404
    assert post(bob, {"grade": 5}).status_code == 403  # a viewer
    assert post(alice, {"grade": 5}, scope="read").status_code == 403
    assert not ReviewCard.objects.exists()
    r = post(alice, {"grade": 5})
    assert r.status_code == 200, r.content
    assert r.json()["repetitions"] == 1 and r.json()["interval_days"] == 1
    r = post(alice, {"grade": 4})
    assert r.json()["interval_days"] == 6
    card = ReviewCard.objects.get(memory=due)
    assert (card.repetitions, card.interval_days, card.last_grade) == (2, 6, 4)
    assert OpLog.objects.filter(op="review.grade", target_id=due.pk).count() == 2


@pytest.mark.parametrize("body", [{"grade": 6}, {"grade": -1}, {"grade": "x"}, {}, {"grade": 3, "extra": 1}])
def test_bad_grades_are_422_and_nothing_stored(client: Any, alice: Any, headers_for: Any, due: Any, body: Any) -> None:
    r = client.post(f"/api/v1/review/{due.pk}/grade", body, content_type="application/json", **headers_for(alice))
    assert r.status_code == 422
    assert r.json()["error"]["message"]
    assert not ReviewCard.objects.exists()
    assert not OpLog.objects.filter(op="review.grade").exists()
