"""The Claude Code hook (deploy/hooks/claude-code/atrium-capture.sh) against a running server and a real worker: fed
the hook's JSON on stdin and pointed at a real-format transcript, it captures the session turn by turn into the
project palace of the working directory's git origin, each turn once, also when the transcript grows, the state
file is lost, or the reader changes (python3, jq). Then the Log's capture category shows what capture did."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from capture.models import CaptureSession, CaptureTurn
from capture.tasks import enqueue_capture_process
from memory.models import Memory
from palace.models import OpLog, Palace
from tests.conftest import PROJECT_ORIGIN

HOOK = Path(settings.BASE_DIR) / "deploy" / "hooks" / "claude-code" / "atrium-capture.sh"
TRANSCRIPTS = Path(__file__).parent / "hook"
SESSION = "7b1e2c3d-4a5f-4e6d-8c7b-9a0b1c2d3e4f"
# What the hook reads from session.jsonl (README.md beside it), then from more.jsonl appended.
FIRST = [
    ("user", ""),
    ("assistant", ""),
    ("tool", "mcp__atrium__memory_search"),
    ("tool", "mcp__atrium__memory_search"),
    ("assistant", ""),
    ("tool", "Edit"),
    ("tool", "Edit"),
    ("user", ""),
]
MORE = [("assistant", ""), ("user", "")]
DEADLINE_S = 180  # the worker embeds on a shared 2-core machine


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A checkout whose origin is the project's (alice owns it): where the agent works."""
    repo = tmp_path / "demo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", PROJECT_ORIGIN], check=True)
    return repo


def run_hook(
    transcript: Path, *, cwd: Path, base: str, token: str, state: Path, event: str = "Stop", **env: str
) -> subprocess.CompletedProcess[str]:
    hook_input = {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": str(cwd),
        "hook_event_name": event,
        "permission_mode": "default",
    }
    return subprocess.run(
        ["sh", str(HOOK)],
        input=json.dumps(hook_input),
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(state.parent),
            "ATRIUM_URL": base,
            "ATRIUM_TOKEN": token,
            "ATRIUM_STATE_DIR": str(state),
            # A loaded CI machine can take longer than the hook's 10 s to answer a first request; a request that
            # times out is only resent next time, which would make the count checked below a race, not a result.
            "ATRIUM_HOOK_TIMEOUT": "60",
            **env,
        },
    )


def settled(count: int) -> list[CaptureTurn]:
    """The session's turns once `count` are stored and none is pending (polled, with a deadline)."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        turns = list(CaptureTurn.objects.filter(session__key=SESSION).order_by("index"))
        if len(turns) == count and all(t.state != CaptureTurn.State.PENDING for t in turns):
            return turns
        time.sleep(0.2)
    pytest.fail(f"the worker did not settle {count} turns in {DEADLINE_S} s: {[(t.index, t.state) for t in turns]}")


def episodes(palace: Palace) -> list[tuple[str, str]]:
    rows = Memory.objects.filter(palace=palace, source_session=SESSION, kind=Memory.Kind.EPISODE)
    return sorted(rows.values_list("source_turn", "content"))


def test_the_hook_captures_each_turn_once_into_the_workspace_project(
    asgi_server: str,
    worker: Any,
    alice: Any,
    project: Palace,
    token_for: Callable[..., str],
    workspace: Path,
    tmp_path: Path,
    client_for: Callable[[Any], Any],
) -> None:
    token, state = token_for(alice), tmp_path / "home" / "atrium"
    state.parent.mkdir()
    transcript = tmp_path / "session.jsonl"
    shutil.copy(TRANSCRIPTS / "session.jsonl", transcript)

    first = run_hook(transcript, cwd=workspace, base=asgi_server, token=token, state=state)
    assert (first.returncode, first.stdout) == (0, ""), first.stderr  # nothing on stdout: Claude Code reads it
    turns = settled(len(FIRST))
    assert [(t.role, t.tool) for t in turns] == FIRST
    assert all(t.text == "" for t in turns if t.role == "tool")  # tool output never left the machine
    session = CaptureSession.objects.get(key=SESSION)
    assert (session.palace_id, session.routed_by, session.client) == (project.pk, "project", "claude-code"), (
        session.origin,
        session.routing_reason,
    )
    assert (state / "claude-code" / f"{SESSION}.next").read_text().strip() == "8"
    stored = episodes(project)
    assert [turn for turn, _ in stored] == ["0", "7"]  # light mode: the user's turns
    assert "advisory lock" in stored[0][1] and "ruff check" in stored[1][1]
    assert not Memory.objects.filter(content__contains="must never run twice").exists()  # the recall, not echoed

    # The session goes on; at its end the hook sends only the new turns, read this time by jq.
    with transcript.open("a") as out:
        out.write((TRANSCRIPTS / "more.jsonl").read_text())
    second = run_hook(
        transcript,
        cwd=workspace,
        base=asgi_server,
        token=token,
        state=state,
        event="SessionEnd",
        ATRIUM_HOOK_PARSER="jq",
    )
    assert second.returncode == 0, second.stderr
    turns = settled(len(FIRST) + len(MORE))
    assert [(t.role, t.tool) for t in turns] == FIRST + MORE
    assert [turn for turn, _ in episodes(project)] == ["0", "7", "9"]
    assert "5433" in episodes(project)[2][1]

    # The state file lost: the whole transcript again stores nothing twice.
    (state / "claude-code" / f"{SESSION}.next").unlink()
    third = run_hook(transcript, cwd=workspace, base=asgi_server, token=token, state=state)
    assert third.returncode == 0 and (state / "claude-code" / f"{SESSION}.next").read_text().strip() == "10"
    assert CaptureTurn.objects.filter(session__key=SESSION).count() == 10
    assert [turn for turn, _ in episodes(project)] == ["0", "7", "9"]
    assert OpLog.objects.filter(op="capture.turn", palace=project).count() == 10  # each turn processed once
    assert not Memory.objects.filter(source_session=SESSION).exclude(palace=project).exists()

    # A backfilled session of alice's, run by the same worker: its rows show in the Log's capture category too.
    backfilled = CaptureSession.objects.create(
        user=alice, palace=project, key="bf-1", client="claude-code", source=CaptureSession.Source.BACKFILL
    )
    CaptureTurn.objects.create(session=backfilled, index=0, role="user", text="Never force-push to main.")
    enqueue_capture_process(backfilled.pk)
    deadline = time.monotonic() + DEADLINE_S
    while CaptureTurn.objects.filter(session=backfilled, state="pending").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert Memory.objects.filter(source_session="bf-1", source_kind="backfill").exists()

    client = client_for(alice)
    assert client.post("/scope/", {"mode": "project", "project": project.pk}).status_code == 302
    captured = client.get("/log/?category=capture").content.decode()
    assert captured.count("Captured a conversation turn") == 11 and "Captured a session" in captured
    categories = re.findall(r'class="row logrow[^"]*" id="op-\d+" data-category="(\w+)"', captured)
    assert len(categories) >= 12 and set(categories) == {"capture"}
    assert "Saved a memory" not in captured and "</em> backfill</span>" in captured
    written = client.get("/log/?category=writes").content.decode()  # positive control: the saves are writes
    assert "Saved a memory" in written and "Captured a conversation turn" not in written


def test_the_hook_never_fails_the_agent(db: Any, tmp_path: Path) -> None:
    """A server that is down, no token, or input that is not the hook's: exit 0, nothing on stdout, a log line."""
    transcript = tmp_path / "session.jsonl"
    shutil.copy(TRANSCRIPTS / "session.jsonl", transcript)
    state = tmp_path / "home" / "atrium"
    state.parent.mkdir()
    down = run_hook(transcript, cwd=tmp_path, base="http://127.0.0.1:9", token="atr_x", state=state)
    assert (down.returncode, down.stdout) == (0, "")
    assert not (state / "claude-code" / f"{SESSION}.next").exists()  # nothing counts as sent
    log = (state / "hook.log").read_text()
    assert "answered 000" in log
    no_token = run_hook(transcript, cwd=tmp_path, base="http://127.0.0.1:9", token="", state=state)
    assert no_token.returncode == 0 and "ATRIUM_TOKEN is not set" in (state / "hook.log").read_text()
    garbage = subprocess.run(
        ["sh", str(HOOK)],
        input="not json",
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": os.environ["PATH"], "ATRIUM_TOKEN": "atr_x", "ATRIUM_STATE_DIR": str(state)},
    )
    assert (garbage.returncode, garbage.stdout) == (0, "")
    assert "no usable session_id" in (state / "hook.log").read_text()
