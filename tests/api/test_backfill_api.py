"""REST door to backfill: multipart uploads (files and archives) with the rules, the zero-cost estimate, a run
started (202), read, paused and resumed; only the starter sees a run; write scope for what changes; clear 422s;
uploads take the larger body limit."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from capture.backfill import backfill_run_process
from capture.models import BackfillRun, CaptureSession
from config.asgi import body_rule
from memory.models import Memory
from palace.models import Palace

TRANSCRIPTS = Path(__file__).resolve().parent.parent / "capture" / "transcripts"
DEMO = TRANSCRIPTS / "claude-code" / "-home-alice-src-demo"
EN, ZH = "3f6c2a1e-5b7d-4c8e-9a0f-1d2e3c4b5a61", "8a2d4e6f-1c3b-4a5d-8e7f-0a1b2c3d4e52"
MAP = "/home/alice/src/demo=github.com/atrium-test/demo"
BASE = "/api/v1/backfill"


def _files(*paths: Path) -> list[SimpleUploadedFile]:
    return [SimpleUploadedFile(p.name, p.read_bytes(), content_type="application/octet-stream") for p in paths]


def _demo() -> list[SimpleUploadedFile]:
    return _files(*sorted(DEMO.glob("*.jsonl")))


def _tar_of(folder: Path) -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(folder, arcname="projects")
    return SimpleUploadedFile("projects.tar.gz", buffer.getvalue(), content_type="application/gzip")


@pytest.fixture
def api(token_for: Callable[..., str]) -> Callable[..., Client]:
    return lambda user, scope="write": Client(headers={"Authorization": f"Bearer {token_for(user, scope=scope)}"})


def _post(client: Client, path: str, files: list[Any], **fields: Any) -> Any:
    return client.post(f"{BASE}{path}", {"files": files, **fields})


def test_the_estimate_of_uploaded_files_says_where_each_session_goes_and_reads_no_git(
    alice: Any, project: Palace, api: Callable[..., Client]
) -> None:
    # A read token may estimate: nothing is stored.
    response = _post(api(alice, "read"), "/estimate", _demo(), window_days="0", mappings=[MAP])
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["method"].startswith("zero-cost estimate") and body["git_read"] is False
    by_session = {s["session"]: s for s in body["per_session"]}
    assert set(by_session) == {EN, ZH, f"{EN}/sidechain-1"}  # the inline subagent is a session of its own
    assert by_session[f"{EN}/sidechain-1"]["skip_reason"] == "sidechain" and body["skip_reasons"] == {"sidechain": 1}
    assert by_session[EN]["palace"] == {"id": project.pk, "name": project.label, "chosen": "project"}
    assert by_session[EN]["origin_from"] == "map"
    assert body["turns_by_palace"] == {project.label: body["turns"]} and body["turns"] > 0
    assert not CaptureSession.objects.exists() and not BackfillRun.objects.exists()

    # Without the mapping, the same folder means nothing here: the personal palace, and the reason says git was
    # not read (an uploader's /home/alice/src/demo is not this server's).
    body = _post(api(alice), "/estimate", _demo(), window_days="0").json()
    personal = Palace.objects.get(personal_owner=alice)
    assert {s["palace"]["id"] for s in body["per_session"]} == {personal.pk}
    assert all("git not read for uploads" in s["why"] for s in body["per_session"])


def test_an_archive_of_the_projects_folder_is_read_and_the_rules_decide_the_skips(
    alice: Any, api: Callable[..., Client]
) -> None:
    archive = _tar_of(TRANSCRIPTS / "claude-code")
    body = _post(api(alice), "/estimate", [archive], window_days="0").json()
    assert body["sessions"] == 5  # two of alice's, bob's, and the two subagents (inline and in a file)
    assert body["skip_reasons"] == {"sidechain": 2}
    archive.seek(0)
    body = _post(api(alice), "/estimate", [archive], window_days="0", include_sidechains="true").json()
    assert body["skip_reasons"] == {}
    archive.seek(0)
    body = _post(api(alice), "/estimate", [archive], window_days="0", max_turns="5").json()
    assert body["turns"] == 5 and body["skip_reasons"].get("over total turn budget", 0) >= 1


def test_a_run_is_started_read_and_runs_to_done_and_only_its_starter_sees_it(
    alice: Any, bob: Any, project: Palace, api: Callable[..., Client]
) -> None:
    refused = _post(api(alice, "read"), "/runs", _demo(), window_days="0", mappings=[MAP])
    assert refused.status_code == 403 and not BackfillRun.objects.exists()

    response = _post(api(alice), "/runs", _demo(), window_days="0", mappings=[MAP])
    assert response.status_code == 202, response.content
    started = response.json()
    run = BackfillRun.objects.get(pk=started["id"])
    assert (started["state"], started["turns_done"], started["progress"]) == ("queued", 0, 0.0)
    assert started["turns_total"] == run.counts["turns_total"] > 0
    assert set(CaptureSession.objects.filter(backfill_run=run).values_list("key", flat=True)) == {EN, ZH}
    assert set(CaptureSession.objects.filter(backfill_run=run).values_list("palace_id", flat=True)) == {project.pk}
    assert sorted(run.files) == sorted(f.name for f in _demo())

    # Another user: the 404 of a run that does not exist, and not in their list; alice sees both (the control).
    assert api(bob).get(f"{BASE}/runs/{run.pk}").status_code == 404
    assert api(bob).post(f"{BASE}/runs/{run.pk}/pause").status_code == 404
    assert api(bob).get(f"{BASE}/runs").json() == []
    assert api(alice).get(f"{BASE}/runs/{run.pk}").status_code == 200
    assert [r["id"] for r in api(alice).get(f"{BASE}/runs").json()] == [run.pk]

    backfill_run_process(run_id=run.pk)  # the worker's task, in process
    done = api(alice, "read").get(f"{BASE}/runs/{run.pk}").json()
    assert (done["state"], done["progress"], done["ended"]) == ("done", 1.0, True)
    assert done["turns_done"] == done["turns_total"]
    # Labelled: no model is configured in the tests, so the rules extracted every turn and wrote the summaries.
    assert set(done["extraction"]["turns_by_method"]) == {"rules"}
    assert sum(done["extraction"]["turns_by_method"].values()) > 0
    assert done["extraction"]["summaries_by_method"] == {"rules": 2}
    saved = Memory.objects.filter(palace=project, source_kind="backfill")
    assert saved.count() == done["memories"] > 0
    assert set(saved.values_list("source_session", flat=True)) == {EN, ZH}


def test_pause_and_resume_need_the_write_scope_and_the_right_state(alice: Any, api: Callable[..., Client]) -> None:
    run_id = _post(api(alice), "/runs", _demo(), window_days="0").json()["id"]
    assert api(alice, "read").post(f"{BASE}/runs/{run_id}/pause").status_code == 403
    paused = api(alice).post(f"{BASE}/runs/{run_id}/pause")
    assert paused.status_code == 200 and paused.json()["pause_requested"] is True
    backfill_run_process(run_id=run_id)  # the job stops at once: the pause was asked before the first batch
    assert api(alice).get(f"{BASE}/runs/{run_id}").json()["state"] == "paused"
    again = api(alice).post(f"{BASE}/runs/{run_id}/pause")
    assert again.status_code == 422 and "only a queued or running run can pause" in again.json()["error"]["message"]

    assert api(alice, "read").post(f"{BASE}/runs/{run_id}/resume").status_code == 403
    resumed = api(alice).post(f"{BASE}/runs/{run_id}/resume")
    assert resumed.status_code == 200 and resumed.json()["state"] == "queued"
    backfill_run_process(run_id=run_id)
    assert BackfillRun.objects.get(pk=run_id).state == "done"
    assert api(alice).post(f"{BASE}/runs/{run_id}/resume").status_code == 422


@pytest.mark.parametrize(
    ("files", "fields", "message"),
    [
        ([], {}, "files"),
        ([SimpleUploadedFile("notes.txt", b"hello")], {}, "files: notes.txt: send a .jsonl or .json transcript"),
        ([SimpleUploadedFile("x.jsonl", b'{"a": 1}\n')], {}, "files: x.jsonl: not a transcript we can read"),
        ([SimpleUploadedFile("x.zip", b"PK\x03\x04broken")], {}, "files: not a readable zip archive"),
        (None, {"mappings": ["relative/dir=github.com/a/b"]}, "mappings: 'relative/dir' is not an absolute folder"),
        (None, {"mappings": ["/src/app=not an origin"]}, "mappings:"),
        (None, {"window_days": "-1"}, "window_days"),
        (None, {"max_turns": "5001"}, "max_turns"),
        (None, {"include_sidechains": "perhaps"}, "include_sidechains"),
    ],
)
def test_bad_uploads_and_rules_are_a_422_that_names_what_to_fix(
    alice: Any, api: Callable[..., Client], files: list[Any] | None, fields: dict[str, Any], message: str
) -> None:
    for path in ("/estimate", "/runs"):
        for upload in files or []:
            upload.seek(0)  # sent twice: to each door
        response = _post(api(alice), path, _demo() if files is None else files, **fields)
        assert response.status_code == 422, response.content
        assert message in response.json()["error"]["message"]
    assert not BackfillRun.objects.exists() and not CaptureSession.objects.exists()


def test_a_missing_run_is_a_404_and_uploads_have_the_larger_body_limit(alice: Any, api: Callable[..., Client]) -> None:
    assert api(alice).get(f"{BASE}/runs/999999").status_code == 404
    for path in (f"{BASE}/estimate", f"{BASE}/runs", "/backfill/estimate/", "/backfill/run/"):
        assert body_rule({"path": path, "method": "POST"}).setting == "ATRIUM_MAX_UPLOAD_BYTES"
    assert body_rule({"path": f"{BASE}/runs/1/pause", "method": "POST"}).setting == "ATRIUM_MAX_BODY_BYTES"
    assert body_rule({"path": f"{BASE}/runs", "method": "GET"}).setting == "ATRIUM_MAX_BODY_BYTES"
