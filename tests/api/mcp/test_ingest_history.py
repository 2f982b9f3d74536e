"""memory_ingest_history through the official MCP client: server-side paths only for staff or under
ATRIUM_BACKFILL_DIRS (everyone else is told to upload through REST), a dry run by default that stores nothing, a run
started with run=true, its progress by run_id (only for its starter), pause and resume, and the labels."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from capture.backfill import backfill_run_process
from capture.models import BackfillRun, CaptureSession
from memory.models import Memory
from palace.models import Palace
from tests.api.mcp.conftest import call_sync, text_of

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "capture" / "transcripts"
DEMO = TRANSCRIPTS / "claude-code" / "-home-alice-src-demo"
MAP = "/home/alice/src/demo=github.com/atrium-test/demo"
TOOL = "memory_ingest_history"


@pytest.fixture
def staff(make_user: Callable[..., Any], mcp_db: None, token_for: Callable[..., str]) -> tuple[Any, str]:
    user = make_user("stella", admin=True)
    return user, token_for(user)


def test_a_dry_run_by_staff_estimates_server_paths_and_stores_nothing(staff: tuple[Any, str]) -> None:
    _, token = staff
    result = call_sync(token, TOOL, {"paths": [str(DEMO)], "window_days": 0})
    assert not result.is_error, text_of(result)
    out = result.structured_content
    assert (out["action"], out["pathsAllowedBy"], out["gitRead"]) == ("estimate", "staff", True)
    assert out["method"].startswith("zero-cost estimate") and out["run"] is None
    assert out["estimate"]["sessions"] == 3 and out["estimate"]["skip_reasons"] == {"sidechain": 1}
    assert "nothing stored" in text_of(result) and "git read" in text_of(result)
    assert not BackfillRun.objects.exists() and not CaptureSession.objects.exists()


def test_other_users_are_refused_outside_atrium_backfill_dirs_and_told_to_upload(
    tokens: dict[str, str], settings: Any, tmp_path: Path
) -> None:
    settings.ATRIUM_BACKFILL_DIRS = []
    refused = call_sync(tokens["alice"], TOOL, {"paths": [str(DEMO)], "window_days": 0})
    assert refused.is_error and "ATRIUM_BACKFILL_DIRS" in text_of(refused)
    assert "POST /api/v1/backfill" in text_of(refused)

    settings.ATRIUM_BACKFILL_DIRS = [str(TRANSCRIPTS / "claude-code")]
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes((DEMO / "3f6c2a1e-5b7d-4c8e-9a0f-1d2e3c4b5a61.jsonl").read_bytes())
    link = tmp_path / "link"
    link.symlink_to(TRANSCRIPTS / "codex")  # a symlink is judged by where it leads
    for path in (
        str(outside),
        str(TRANSCRIPTS / "claude-code" / ".." / "codex"),
        "-home-alice-src-demo",  # relative: only absolute paths
        "/etc/passwd",
        str(link),
    ):
        result = call_sync(tokens["alice"], TOOL, {"paths": [path]})
        assert result.is_error, path
        assert "not under a folder this server opens to agents" in text_of(result), path
    # The control: under the configured folder it reads, without git (the folders may be anyone's).
    allowed = call_sync(tokens["alice"], TOOL, {"paths": [str(DEMO)], "window_days": 0, "mappings": [MAP]})
    assert not allowed.is_error, text_of(allowed)
    out = allowed.structured_content
    assert (out["pathsAllowedBy"], out["gitRead"], out["estimate"]["sessions_kept"]) == (
        "ATRIUM_BACKFILL_DIRS",
        False,
        2,
    )
    assert not BackfillRun.objects.exists()


def test_run_true_starts_a_run_that_only_its_starter_follows_to_done(
    tokens: dict[str, str], alice: Any, project: Palace, settings: Any
) -> None:
    settings.ATRIUM_BACKFILL_DIRS = [str(TRANSCRIPTS)]
    args = {"paths": [str(DEMO)], "window_days": 0, "mappings": [MAP], "run": True}
    read = call_sync(tokens["alice_read"], TOOL, args)
    assert read.is_error and "read scope" in text_of(read) and not BackfillRun.objects.exists()

    started = call_sync(tokens["alice"], TOOL, args)
    assert not started.is_error, text_of(started)
    run = started.structured_content["run"]
    assert started.structured_content["action"] == "started" and run["state"] == "queued"
    assert f"run_id={run['id']}" in text_of(started)
    assert BackfillRun.objects.get(pk=run["id"]).user_id == alice.pk

    stranger = call_sync(tokens["charlie"], TOOL, {"run_id": run["id"]})
    assert stranger.is_error and "not found" in text_of(stranger)
    backfill_run_process(run_id=run["id"])  # the worker's task, in process
    done = call_sync(tokens["alice"], TOOL, {"run_id": run["id"]})
    assert not done.is_error, text_of(done)
    view = done.structured_content["run"]
    assert (view["state"], view["progress"]) == ("done", 1.0)
    assert set(view["extraction"]["turns_by_method"]) == {"rules"}  # no model configured: the rules, labelled
    assert "extracted by" in text_of(done) and "rules" in text_of(done)
    assert Memory.objects.filter(palace=project, source_kind="backfill").count() == view["memories"] > 0


def test_pause_and_resume_by_run_id(tokens: dict[str, str], settings: Any) -> None:
    settings.ATRIUM_BACKFILL_DIRS = [str(TRANSCRIPTS)]
    run = call_sync(tokens["alice"], TOOL, {"paths": [str(DEMO)], "window_days": 0, "run": True})
    run_id = run.structured_content["run"]["id"]
    paused = call_sync(tokens["alice"], TOOL, {"run_id": run_id, "action": "pause"})
    assert not paused.is_error and paused.structured_content["run"]["pause_requested"] is True
    backfill_run_process(run_id=run_id)
    assert BackfillRun.objects.get(pk=run_id).state == "paused"
    resumed = call_sync(tokens["alice"], TOOL, {"run_id": run_id, "action": "resume"})
    assert not resumed.is_error and resumed.structured_content["run"]["state"] == "queued"
    again = call_sync(tokens["alice"], TOOL, {"run_id": run_id, "action": "resume"})
    assert again.is_error and "only a paused or failed run can resume" in text_of(again)


@pytest.mark.parametrize(
    ("args", "names"),
    [
        ({}, "paths"),
        ({"paths": ["/x"], "max_turns": 0}, "max_turns"),
        ({"paths": ["/x"], "mappings": ["relative=github.com/a/b"]}, "mappings"),
        ({"run_id": 0}, "run_id"),
    ],
)
def test_bad_arguments_are_tool_errors_that_name_them(
    tokens: dict[str, str], settings: Any, args: dict[str, Any], names: str
) -> None:
    settings.ATRIUM_BACKFILL_DIRS = ["/"]
    result = call_sync(tokens["alice"], TOOL, args)
    assert result.is_error and names in text_of(result), text_of(result)
    assert not BackfillRun.objects.exists()
    assert os.path.exists("/")  # the configured root is real: the refusal is the argument's, not the folder's
