"""Directories and uploads: the walk, archives (zip and tar.gz) and their limits."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from capture.importers import Session, TranscriptError, parse_path, parse_upload

TRANSCRIPTS = Path(__file__).resolve().parent.parent / "transcripts"
ALL_IDS = [
    "3f6c2a1e-5b7d-4c8e-9a0f-1d2e3c4b5a61",
    "3f6c2a1e-5b7d-4c8e-9a0f-1d2e3c4b5a61/sidechain-1",
    "8a2d4e6f-1c3b-4a5d-8e7f-0a1b2c3d4e52",
    "c4e8a2b6-9d1f-4e3a-b5c7-2f4e6a8c0d13",
    "c4e8a2b6-9d1f-4e3a-b5c7-2f4e6a8c0d13/a7f3c91",
    "0197a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
    "support-bot-2025-06-10-0007",
]


def transcript_files() -> list[Path]:
    return sorted((p for p in TRANSCRIPTS.rglob("*") if p.suffix in (".jsonl", ".json")), key=str)


def summary(sessions: list[Session]) -> list[tuple[str, str, int, int]]:
    return sorted((s.session_id, s.client, len(s.turns), sum(s.skipped.values())) for s in sessions)


def zip_of(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def tar_gz_of(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def projects_members() -> dict[str, bytes]:
    """The transcripts as an archive of ~/.claude/projects and friends would hold them."""
    return {f"projects/{p.relative_to(TRANSCRIPTS)}": p.read_bytes() for p in transcript_files()}


def test_directory_walk_reads_every_format_and_reports_what_it_cannot(tmp_path: Path) -> None:
    rejected: list[tuple[str, str]] = []
    sessions = parse_path(TRANSCRIPTS, rejected=rejected)

    assert sorted(s.session_id for s in sessions) == sorted(ALL_IDS)
    assert rejected == []
    assert {s.session_id: s.source_name for s in sessions}["support-bot-2025-06-10-0007"] == "openai/helpdesk-chat.json"

    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / "s.jsonl").write_bytes((TRANSCRIPTS / "openai/helpdesk-chat.json").read_bytes())
    (tmp_path / "settings.json").write_text('{"theme": "dark"}')
    (tmp_path / "readme.txt").write_text("not looked at")
    found = parse_path(tmp_path, rejected=rejected)
    assert [s.session_id for s in found] == ["support-bot-2025-06-10-0007"]
    assert rejected == [
        (
            "settings.json",
            "settings.json: not a transcript we can read"
            " (Claude Code session JSONL, Codex rollout JSONL, or OpenAI messages JSON)",
        )
    ]


@pytest.mark.parametrize(("name", "pack"), [("projects.zip", zip_of), ("projects.tar.gz", tar_gz_of)])
def test_archive_upload_gives_the_same_sessions_as_the_files(name: str, pack: object) -> None:
    members = projects_members() | {"projects/notes.txt": b"hello"}
    rejected: list[tuple[str, str]] = []
    sessions = parse_upload(name, pack(members), rejected=rejected)  # type: ignore[operator]

    assert summary(sessions) == summary(parse_path(TRANSCRIPTS))
    assert rejected == [("projects/notes.txt", "not a .jsonl or .json file")]


@pytest.mark.parametrize("bad", ["../escape.jsonl", "/etc/passwd.jsonl", "projects/../../x.jsonl", "C:\\x.jsonl"])
@pytest.mark.parametrize(("name", "pack"), [("a.zip", zip_of), ("a.tar.gz", tar_gz_of)])
def test_archive_with_a_member_outside_it_is_refused(bad: str, name: str, pack: object) -> None:
    good = projects_members()
    assert len(parse_upload(name, pack(good))) == len(ALL_IDS)  # type: ignore[operator]  # the control

    with pytest.raises(TranscriptError, match="points outside the archive; the upload is refused"):
        parse_upload(name, pack(good | {bad: b'{"messages": []}'}))  # type: ignore[operator]


def test_single_file_uploads_and_unsupported_names() -> None:
    data = (TRANSCRIPTS / "openai/helpdesk-chat.json").read_bytes()
    (session,) = parse_upload("chat.json", data)
    assert (session.session_id, session.source_name) == ("support-bot-2025-06-10-0007", "chat.json")

    with pytest.raises(TranscriptError, match="send a .jsonl or .json transcript, or a .zip or .tar.gz"):
        parse_upload("chat.docx", data)
    with pytest.raises(TranscriptError, match="not a readable zip archive"):
        parse_upload("broken.zip", b"PK\x03\x04 and then nothing")
    whole = gzip.compress(" ".join(str(i) for i in range(5000)).encode())
    with pytest.raises(TranscriptError, match="the gzip archive is cut short"):
        parse_upload("broken.tar.gz", whole[: len(whole) // 2])
    with pytest.raises(TranscriptError, match="not a readable gzip archive"):
        parse_upload("broken.tar.gz", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"\xff" * 20)
    with pytest.raises(TranscriptError, match="not a readable tar archive"):
        parse_upload("broken.tar.gz", gzip.compress(b"this is not a tar file" * 40))
    with pytest.raises(TranscriptError, match="a binary file"):
        parse_upload("x.jsonl", b"\x00\x01\x02")
    with pytest.raises(TranscriptError, match="empty file"):
        parse_upload("x.jsonl", b"  \n")


@pytest.mark.parametrize(("name", "pack"), [("a.zip", zip_of), ("a.tar.gz", tar_gz_of)])
def test_archive_limits(name: str, pack: object) -> None:
    members = projects_members()
    build = pack  # type: ignore[assignment]
    with pytest.raises(TranscriptError, match="members"):
        parse_upload(name, build(members), max_members=3)  # type: ignore[operator]

    # A member over the per-member limit is passed over and reported; the others are read.
    rejected: list[tuple[str, str]] = []
    sessions = parse_upload(name, build(members), rejected=rejected, max_member_bytes=15_000)  # type: ignore[operator]
    too_big = sorted(n for n, reason in rejected if reason == "larger than the 15000 byte limit")
    assert too_big == ["projects/claude-code/-home-alice-src-demo/3f6c2a1e-5b7d-4c8e-9a0f-1d2e3c4b5a61.jsonl"]
    assert len(sessions) == len(ALL_IDS) - 2  # that file held a session and its sidechain

    with pytest.raises(TranscriptError, match="expands beyond"):
        parse_upload(name, build(members), max_total_bytes=30_000)  # type: ignore[operator]


def test_compression_bomb_stops_at_the_limit() -> None:
    bomb = gzip.compress(b"\0" * 20_000_000)  # about 20 kB on the wire
    assert len(bomb) < 100_000
    with pytest.raises(TranscriptError, match="expands beyond"):
        parse_upload("bomb.tar.gz", bomb, max_total_bytes=1_000_000, max_members=10)


def test_links_in_a_tar_are_not_followed() -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        link = tarfile.TarInfo("projects/secret.jsonl")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/shadow"
        archive.addfile(link)
        data = (TRANSCRIPTS / "openai/helpdesk-chat.json").read_bytes()
        info = tarfile.TarInfo("projects/chat.json")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    rejected: list[tuple[str, str]] = []
    sessions = parse_upload("a.tgz", buffer.getvalue(), rejected=rejected)

    assert [s.session_id for s in sessions] == ["support-bot-2025-06-10-0007"]
    assert rejected == [("projects/secret.jsonl", "a link or special file, not a transcript")]
