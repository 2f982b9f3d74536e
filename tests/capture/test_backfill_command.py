"""`atrium backfill` through call_command: the dry run's estimate, a run followed with --wait, and clear errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from capture.models import BackfillRun, CaptureSession
from memory.models import Memory
from palace.models import Palace

TRANSCRIPTS = Path(__file__).resolve().parent / "transcripts"


def _backfill(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("backfill", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def eager() -> Iterator[None]:
    """Queued tasks run at once in this process (no worker): --wait then sees the run end."""
    from config.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = before


def test_a_dry_run_prints_sessions_turns_palaces_and_skip_reasons_and_stores_nothing(
    alice: Any, project: Palace
) -> None:
    out, _ = _backfill(
        str(TRANSCRIPTS / "claude-code"), "--user", "alice", "--dry-run", "--days", "0",
        "--map", "/home/alice/src/demo=github.com/atrium-test/demo",
    )  # fmt: skip

    assert "3f6c2a1e-5b7d-4c8e-9a0f-1d2e3c4b5a61" in out and "-> " + project.label in out
    assert "owner of github.com/atrium-test/demo" in out
    assert "not a member" not in out and "no mapping" in out  # bob's folder: no git here, no mapping -> personal
    assert "skipped: sidechain" in out and 'skipped sessions: {"sidechain": 2}' in out
    assert "3 of 5 sessions, 24 turns would run" in out
    assert "no model calls" in out
    assert not CaptureSession.objects.exists() and not BackfillRun.objects.exists()


def test_a_dry_run_as_json_has_the_estimate(alice: Any) -> None:
    out, _ = _backfill(str(TRANSCRIPTS / "openai"), "--user", "alice", "--dry-run", "--days", "0", "--json")
    data = json.loads(out)
    assert (data["sessions"], data["sessions_kept"], data["skip_reasons"]) == (1, 0, {"no cwd": 1})
    out, _ = _backfill(
        str(TRANSCRIPTS / "openai"), "--user", "alice", "--dry-run", "--days", "0", "--include-no-cwd", "--json"
    )
    data = json.loads(out)
    assert (data["sessions_kept"], data["turns"]) == (1, 6)
    assert data["per_session"][0]["palace"]["chosen"] == "personal"


@pytest.mark.django_db(transaction=True)
def test_a_run_with_wait_follows_the_progress_to_the_end(alice: Any, eager: None) -> None:
    out, err = _backfill(str(TRANSCRIPTS / "codex"), "--user", "alice", "--days", "0", "--wait", "--json")

    run = BackfillRun.objects.get()
    data = json.loads(out)
    assert (data["id"], data["state"], run.state) == (run.pk, "done", "done")
    assert data["counts"]["turns_done"] == data["counts"]["turns_total"] == 4
    assert f"backfill run #{run.pk} queued: 4 turns" in err and "done: 4/4 turns" in err
    assert Memory.objects.filter(source_kind="backfill", source_session__contains="0197a1b2").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--user", "nobody"], "nobody"),
        (["--user", "alice", "--max-turns", "0"], "max_turns"),
        (["--user", "alice", "--map", "relative/dir=github.com/a/b"], "not an absolute folder"),
    ],
)
def test_bad_arguments_are_clear_errors(alice: Any, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        _backfill(str(TRANSCRIPTS / "codex"), "--dry-run", *args)
    _backfill(str(TRANSCRIPTS / "codex"), "--dry-run", "--user", "alice")  # the control: good arguments run


def test_an_unreadable_path_is_named(alice: Any, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="/nonexistent/claude: no such file"):
        _backfill("/nonexistent/claude", "--user", "alice", "--dry-run")
    bad = tmp_path / "notes.jsonl"
    bad.write_text("this is not a transcript\n")
    with pytest.raises(CommandError, match="notes.jsonl: not a transcript"):
        _backfill(str(bad), "--user", "alice", "--dry-run")
