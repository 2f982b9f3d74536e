"""The Backfill view: upload and estimate (nothing stored, the palace of each session, outside-scope marks), a run
started from the form, pause and resume only on one's own runs, bad uploads as a 422 in place, Chinese, and the
live progress card pushed over the panel's websocket to the run's owner only."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from capture.backfill import backfill_run_process
from capture.models import BackfillRun, CaptureSession
from memory.models import Memory
from palace import events
from palace.models import Palace
from tests.panel.wscomm import LIVE_TIMEOUT, communicator

TRANSCRIPTS = Path(__file__).resolve().parent.parent / "capture" / "transcripts"
DEMO = TRANSCRIPTS / "claude-code" / "-home-alice-src-demo"
MAP = "/home/alice/src/demo=github.com/atrium-test/demo"
HTMX = {"HTTP_HX_REQUEST": "true"}


def _files() -> list[SimpleUploadedFile]:
    return [SimpleUploadedFile(p.name, p.read_bytes()) for p in sorted(DEMO.glob("*.jsonl"))]


def _start(client: Client, **fields: Any) -> BackfillRun:
    response = client.post("/backfill/run/", {"files": _files(), "window_days": "0", **fields})
    assert response.status_code == 302, response.content
    return BackfillRun.objects.latest("pk")


@pytest.mark.django_db
def test_the_page_and_its_estimate_show_each_sessions_palace_and_store_nothing(
    alice: Any, project: Palace, client_for: Callable[[Any], Client]
) -> None:
    client = client_for(alice)
    page = client.get("/backfill/")
    assert page.status_code == 200 and 'aria-current="page">Backfill' in page.content.decode()
    assert Client().get("/backfill/").status_code == 302  # signed out: to the login page

    response = client.post("/backfill/estimate/", {"files": _files(), "window_days": "0", "mappings": MAP}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and 'id="bf-estimate"' in html and "<html" not in html
    assert "2 of 3 sessions" in html and "zero-cost estimate" in html
    assert "github.com/atrium-test/demo" in html and "skipped: sidechain" in html
    assert "outside this scope" in html  # the scope is "my palace"; the sessions go to the project
    assert not BackfillRun.objects.exists() and not CaptureSession.objects.exists()

    client.post("/scope/", {"mode": "project", "project": project.pk, "next": "/backfill/"})
    again = client.post("/backfill/estimate/", {"files": _files(), "window_days": "0", "mappings": MAP}, **HTMX)
    assert "outside this scope" not in again.content.decode()  # the control: in scope now


@pytest.mark.django_db
def test_bad_uploads_and_rules_come_back_in_place_with_their_message(
    alice: Any, client_for: Callable[[Any], Client]
) -> None:
    client = client_for(alice)
    for fields, message in (
        ({"files": [SimpleUploadedFile("notes.txt", b"hi")]}, "notes.txt: send a .jsonl or .json transcript"),
        ({}, "send at least one transcript file"),
        ({"files": _files(), "max_turns": "0"}, "max_turns: must be from 1 to 5000"),
        ({"files": _files(), "mappings": "not-absolute=github.com/a/b"}, "is not an absolute folder"),
    ):
        response = client.post("/backfill/estimate/", fields, **HTMX)
        assert response.status_code == 422 and message in response.content.decode(), response.content
        for upload in fields.get("files", []):
            upload.seek(0)
        started = client.post("/backfill/run/", fields)
        assert started.status_code == 422 and message in started.content.decode()
    assert not BackfillRun.objects.exists()


@pytest.mark.django_db
def test_a_run_from_the_form_pauses_and_resumes_only_for_its_owner(
    alice: Any, bob: Any, project: Palace, client_for: Callable[[Any], Client]
) -> None:
    owner = client_for(alice)
    run = _start(owner, mappings=MAP)
    assert run.user_id == alice.pk and run.state == "queued"
    assert set(CaptureSession.objects.filter(backfill_run=run).values_list("palace_id", flat=True)) == {project.pk}
    assert f'id="bf-run-{run.pk}"' in owner.get(f"/backfill/?run={run.pk}").content.decode()

    other = client_for(bob)
    assert other.post(f"/backfill/runs/{run.pk}/pause/", **HTMX).status_code == 404
    assert f'id="bf-run-{run.pk}"' not in other.get("/backfill/").content.decode()
    run.refresh_from_db()
    assert run.pause_requested is False
    paused = owner.post(f"/backfill/runs/{run.pk}/pause/", **HTMX)
    assert paused.status_code == 200 and "pause asked" in paused.content.decode()
    backfill_run_process(run_id=run.pk)
    run.refresh_from_db()
    assert run.state == "paused"
    assert other.post(f"/backfill/runs/{run.pk}/resume/", **HTMX).status_code == 404
    resumed = owner.post(f"/backfill/runs/{run.pk}/resume/", **HTMX)
    assert resumed.status_code == 200 and 'data-state="queued"' in resumed.content.decode()


@pytest.mark.django_db
def test_the_page_speaks_chinese(alice: Any, client_for: Callable[[Any], Client]) -> None:
    client = client_for(alice)
    client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/backfill/"})
    html = client.get("/backfill/").content.decode()
    assert "回填" in html and "估算" in html and "运行" in html


@pytest.mark.django_db(transaction=True)
def test_the_runs_progress_is_pushed_to_its_owner_only(
    alice: Any, charlie: Any, client_for: Callable[[Any], Client]
) -> None:
    owner, outsider = client_for(alice), client_for(charlie)
    run = _start(owner)

    async def scenario() -> None:
        a, c = communicator(owner), communicator(outsider)
        assert (await a.connect())[0] and (await c.connect())[0]
        await database_sync_to_async(backfill_run_process)(run_id=run.pk)
        seen = ""
        deadline = time.monotonic() + 10 * LIVE_TIMEOUT
        while 'data-state="done"' not in seen and time.monotonic() < deadline:
            message = await a.receive_from(timeout=LIVE_TIMEOUT)
            if f'id="bf-run-{run.pk}"' in message:
                seen = message
        assert 'hx-swap-oob="true"' in seen and 'data-state="done"' in seen and "the rules" in seen
        # charlie hears nothing of it, even when the event is sent to his group by mistake
        assert await c.receive_nothing(timeout=0.5)
        events.publish(kind="backfill", payload={"run": run.pk}, user_id=charlie.pk)
        assert await c.receive_nothing(timeout=1)
        await a.disconnect()
        await c.disconnect()

    async_to_sync(scenario)()
    assert Memory.objects.filter(source_kind="backfill").count() > 0
