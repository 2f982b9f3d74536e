"""The episode timeline's one read (capture.timeline): groups by session, headers that say how they were made, the
three modes, the reader's scope, and errors that name the argument."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from capture.models import CaptureSession
from capture.timeline import episode_timeline, timeline_bound
from memory.models import Memory
from palace.errors import InvalidInput, NotFound
from palace.models import Palace
from tests.fakes.memories import T0, make_memory


def episode(palace: Palace, text: str, *, session: str, minutes: int, placard: str = "") -> Memory:
    made = make_memory(palace, text, kind="episode", placard=placard)
    Memory.objects.filter(pk=made.pk).update(source_session=session, occurred_at=T0 + timedelta(minutes=minutes))
    made.refresh_from_db()
    return made


@pytest.fixture
def day(palace: Palace, project: Palace, alice: Any) -> dict[str, Memory]:
    """alice's morning: a captured session (summarised by the model), an MCP session (no capture summary), episodes
    without a session, and a session in the project palace summarised by the rules."""
    made = {
        "c0": episode(palace, "Asked how to rotate the staging keys", session="cap-1", minutes=0),
        "c1": episode(palace, "Rotated them with the vault CLI", session="cap-1", minutes=5),
        "m0": episode(palace, "Agent noted the flaky login test", session="mcp-1", minutes=30, placard="flaky login"),
        "m1": episode(palace, "Agent skipped it for now", session="mcp-1", minutes=31),
        "loose": episode(palace, "A note with no session", session="", minutes=200),
        "p0": episode(project, "Discussed the release branch policy", session="proj-1", minutes=10),
    }
    CaptureSession.objects.create(
        user=alice, palace=palace, key="cap-1", summary="Rotated the staging keys.", summary_method="llm"
    )
    CaptureSession.objects.create(
        user=alice,
        palace=project,
        key="proj-1",
        summary="Agreed the release branch policy.",
        summary_method="rules",
        summary_fallback="no model configured",
        source="backfill",
    )
    return made


def _heads(timeline: Any) -> dict[str, tuple[str, str, str]]:
    return {g.episodes.session: (g.header.text, g.header.method, g.header.source) for g in timeline.groups}


def test_groups_are_headed_by_the_capture_summary_else_their_first_episode(
    day: dict[str, Memory], alice: Any, palace: Palace, project: Palace
) -> None:
    found = episode_timeline(user=alice, palace_ids=[palace.pk, project.pk])
    assert [g.episodes.session for g in found.groups] == ["", "mcp-1", "proj-1", "cap-1"]  # newest session first
    assert _heads(found) == {
        "cap-1": ("Rotated the staging keys.", "llm", "capture"),
        "proj-1": ("Agreed the release branch policy.", "rules", "backfill"),
        "mcp-1": ("flaky login", "first_episode", "episode"),  # the first episode's placard stands in
        "": ("", "none", "none"),
    }
    cap = next(g for g in found.groups if g.episodes.session == "cap-1")
    assert [m.pk for m in cap.episodes.entries] == [day["c0"].pk, day["c1"].pk]  # in time order inside the group
    proj = next(g for g in found.groups if g.episodes.session == "proj-1")
    assert proj.header.fallback == "no model configured"
    assert found.mode == "range" and found.next_cursor == ""


def test_a_summary_is_its_owners_alone_and_an_outsider_reads_nothing(
    day: dict[str, Memory], alice: Any, bob: Any, charlie: Any, project: Palace, palace: Palace
) -> None:
    # bob reads the project palace: alice's session is there, headed by its first episode, not by her summary.
    bobs = episode_timeline(user=bob, palace_ids=[project.pk])
    assert _heads(bobs) == {"proj-1": ("Discussed the release branch policy", "first_episode", "episode")}
    alices = episode_timeline(user=alice, palace_ids=[project.pk])  # positive control: alice sees her summary
    assert _heads(alices)["proj-1"][0] == "Agreed the release branch policy."
    # charlie may read neither palace: the doors pass his palaces only, and the anchor of `around` is not his.
    assert episode_timeline(user=charlie, palace_ids=[Palace.objects.get(personal_owner=charlie).pk]).groups == []
    with pytest.raises(NotFound):
        episode_timeline(user=charlie, palace_ids=[palace.pk], around=day["c1"].pk)
    assert episode_timeline(user=alice, palace_ids=[palace.pk], around=day["c1"].pk).groups  # positive control


def test_around_a_memory_keeps_the_window_and_a_session_drills_down(
    day: dict[str, Memory], alice: Any, palace: Palace, project: Palace
) -> None:
    both = [palace.pk, project.pk]
    narrow = episode_timeline(user=alice, palace_ids=both, around=day["c1"].pk, window_minutes=10)
    assert narrow.mode == "around" and narrow.anchor is not None and narrow.anchor.pk == day["c1"].pk
    assert {m.pk for g in narrow.groups for m in g.episodes.entries} == {day["c0"].pk, day["c1"].pk, day["p0"].pk}
    assert narrow.since == T0 - timedelta(minutes=5) and narrow.until == T0 + timedelta(minutes=15)
    wide = episode_timeline(user=alice, palace_ids=both, around=day["c1"].pk)  # default: ± 60 minutes
    assert wide.window_minutes == 60
    assert {m.pk for g in wide.groups for m in g.episodes.entries} == {
        day[k].pk for k in ("c0", "c1", "m0", "m1", "p0")
    }
    one = episode_timeline(user=alice, palace_ids=both, session="mcp-1")
    assert one.mode == "session" and [g.episodes.session for g in one.groups] == ["mcp-1"]
    ranged = episode_timeline(
        user=alice, palace_ids=both, since=T0 + timedelta(minutes=4), until=T0 + timedelta(minutes=30)
    )
    assert {m.pk for g in ranged.groups for m in g.episodes.entries} == {day["c1"].pk, day["p0"].pk, day["m0"].pk}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"around": 1, "since": T0}, "around"),
        ({"window_minutes": 30}, "window_minutes"),
        ({"around": 1, "window_minutes": 0}, "window_minutes"),
        ({"since": T0, "until": T0 - timedelta(minutes=1)}, "end"),
        ({"session": "x" * 201}, "session"),
    ],
)
def test_bad_combinations_name_the_argument(alice: Any, palace: Palace, kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        episode_timeline(user=alice, palace_ids=[palace.pk], **kwargs)
    assert caught.value.detail["field"] == field and field.split("_")[0] in caught.value.message


def test_a_window_at_the_edge_of_time_holds_at_the_first_moment(alice: Any, palace: Palace) -> None:
    ancient = episode(palace, "A memory dated year 1", session="old", minutes=0)
    Memory.objects.filter(pk=ancient.pk).update(occurred_at=datetime(1, 1, 1, 0, 10, tzinfo=UTC))
    found = episode_timeline(user=alice, palace_ids=[palace.pk], around=ancient.pk)
    assert found.since == datetime.min.replace(tzinfo=UTC) and [g.episodes.session for g in found.groups] == ["old"]


def test_a_day_bound_covers_the_whole_day_and_bad_text_names_its_field(settings: Any) -> None:
    start, end = timeline_bound("2026-11-01", field="start"), timeline_bound("2026-11-01", field="end", end=True)
    assert end - start == timedelta(days=1) - timedelta(microseconds=1)
    assert timeline_bound("2026-11-01T12:00:00Z", field="start") == T0
    assert timeline_bound("2026-11-01t12:00:00z", field="start") == T0  # RFC 3339 allows lower case
    assert timeline_bound("2026-11-01T11:59:60Z", field="end") == T0 - timedelta(microseconds=1)  # a leap second
    # Beyond what PostgreSQL holds once in UTC: the first and last moments there are, as a range bound means.
    assert timeline_bound("0001-01-01T00:00:00+23:59", field="start") == datetime.min.replace(tzinfo=UTC)
    assert timeline_bound("9999-12-31T23:59:59-23:59", field="end") == datetime.max.replace(tzinfo=UTC)
    with pytest.raises(InvalidInput) as caught:
        timeline_bound("yesterday", field="end")
    assert caught.value.detail["field"] == "end" and "ISO 8601" in caught.value.message
