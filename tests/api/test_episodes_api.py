"""GET /api/v1/episodes/timeline: episodes by session with their headers, scoped to the caller, clear 422s."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from capture.models import CaptureSession
from memory.models import Memory
from palace.models import Palace
from tests.conftest import PROJECT_ORIGIN
from tests.fakes.memories import T0, make_memory

URL = "/api/v1/episodes/timeline"


def episode(palace: Palace, text: str, *, session: str, minutes: int) -> Memory:
    made = make_memory(palace, text, kind="episode")
    Memory.objects.filter(pk=made.pk).update(source_session=session, occurred_at=T0 + timedelta(minutes=minutes))
    return made


@pytest.fixture
def seeded(palace: Palace, project: Palace, alice: Any) -> dict[str, Memory]:
    made = {
        "a0": episode(palace, "Asked about the staging keys", session="s-keys", minutes=0),
        "a1": episode(palace, "Rotated the staging keys", session="s-keys", minutes=3),
        "p0": episode(project, "Talked about the release branch", session="s-rel", minutes=20),
    }
    CaptureSession.objects.create(
        user=alice, palace=palace, key="s-keys", summary="Rotated the staging keys.", summary_method="rules"
    )
    return made


def test_groups_with_headers_and_the_outsider_sees_none_of_them(
    seeded: dict[str, Memory], alice: Any, charlie: Any, api_for: Any
) -> None:
    status, body = api_for(alice).get(URL)
    assert status == 200, body
    assert [g["session"] for g in body["groups"]] == ["s-rel", "s-keys"]
    keys = body["groups"][1]
    assert (keys["summary"], keys["summary_method"], keys["summary_source"]) == (
        "Rotated the staging keys.",
        "rules",
        "capture",
    )
    assert [e["id"] for e in keys["episodes"]] == [seeded["a0"].pk, seeded["a1"].pk] and keys["count"] == 2
    assert body["groups"][0]["summary_method"] == "first_episode"
    assert body["groups"][0]["summary"] == "Talked about the release branch"
    assert body["mode"] == "range" and len(body["palaces"]) == 2

    outsider = api_for(charlie)
    status, body = outsider.get(URL)
    assert status == 200 and body["groups"] == [] and body["palaces"] == [Palace.objects.get(personal_owner=charlie).pk]
    assert outsider.get(URL, project=PROJECT_ORIGIN)[0] == 404
    assert outsider.get(URL, palace=seeded["a0"].palace_id)[0] == 404
    status, body = outsider.get(URL, around=seeded["a1"].pk)
    assert status == 404 and body["error"]["message"] == "memory not found"
    status, body = api_for(alice).get(URL, around=seeded["a1"].pk, window_minutes=5)  # positive control
    assert status == 200 and body["around"] == seeded["a1"].pk
    assert [e["id"] for g in body["groups"] for e in g["episodes"]] == [seeded["a0"].pk, seeded["a1"].pk]


def test_project_and_session_narrow_the_read(seeded: dict[str, Memory], alice: Any, bob: Any, api_for: Any) -> None:
    status, body = api_for(bob).get(URL, project=PROJECT_ORIGIN)  # bob is a viewer of the project
    assert status == 200 and [g["session"] for g in body["groups"]] == ["s-rel"]
    status, body = api_for(alice).get(URL, session="s-keys", start="2026-11-01", end="2026-11-01")
    assert status == 200 and body["mode"] == "session" and [g["session"] for g in body["groups"]] == ["s-keys"]
    status, body = api_for(alice).get(URL, start="2026-11-02")
    assert status == 200 and body["groups"] == []


def test_the_query_count_does_not_grow_with_episodes(palace: Palace, alice: Any, api_for: Any) -> None:
    api = api_for(alice)
    for i in range(3):
        episode(palace, f"turn {i}", session=f"s{i}", minutes=i)
    assert api.get(URL)[0] == 200  # the token's first use is stamped once; count the calls after it
    with CaptureQueriesContext(connection) as few:
        assert api.get(URL)[0] == 200
    for i in range(3, 12):
        episode(palace, f"turn {i}", session=f"s{i % 4}", minutes=i)
    with CaptureQueriesContext(connection) as many:
        assert api.get(URL)[0] == 200
    assert len(many) == len(few)


@pytest.mark.parametrize(
    ("params", "names"),
    [
        ({"start": "yesterday"}, "start"),
        ({"end": "2026-13-01"}, "end"),
        ({"start": "2026-11-02", "end": "2026-11-01"}, "end"),
        ({"around": 1, "start": "2026-11-01"}, "around"),
        ({"window_minutes": 5}, "window_minutes"),
        ({"around": 1, "window_minutes": 0}, "window_minutes"),
        ({"around": "abc"}, "around"),
        ({"palace": 1, "project": PROJECT_ORIGIN}, "palace"),
        ({"groups": 0}, "groups"),
        ({"session": "x" * 201}, "session"),
    ],
)
def test_bad_input_is_a_422_naming_the_argument(alice: Any, api_for: Any, params: dict[str, Any], names: str) -> None:
    status, body = api_for(alice).get(URL, **params)
    assert status == 422, body
    assert body["error"]["message"].startswith(names) or names in body["error"]["message"], body
