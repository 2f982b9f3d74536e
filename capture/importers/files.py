"""Files, directories and uploads: which format a file is, and reading archives safely.

Archives are read in memory and never extracted to disk; still, a member whose name climbs out of the archive
(`../x`, `/etc/x`, `C:\\x`) refuses the whole upload, since no honest archive of `~/.claude/projects` has one. Sizes
are bounded three ways: the members counted, each member's size, and the total expanded size (a gzip stream is
inflated with a ceiling, so a compression bomb stops at the limit instead of filling memory).
"""

from __future__ import annotations

import io
import json
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from capture.importers.claude_code import parse_claude_code
from capture.importers.codex import parse_codex
from capture.importers.jsonl import first_records
from capture.importers.openai import parse_openai_messages
from capture.importers.transcript import Session, TranscriptError

MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_MEMBERS = 5000
MAX_TOTAL_BYTES = 512 * 1024 * 1024
SUFFIXES = (".jsonl", ".json")
_CLAUDE_TYPES = {"user", "assistant", "summary", "system", "file-history-snapshot"}
_CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
Rejected = list[tuple[str, str]] | None


def _parser_for(text: str, name: str) -> Callable[..., list[Session]]:
    """Detect the format from the content (the extension only breaks ties): a file is parsed by what it is."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        return parse_openai_messages
    if stripped.startswith("{"):
        try:
            whole: Any = json.loads(text)
        except ValueError:
            whole = None
        if isinstance(whole, dict) and isinstance(whole.get("items"), list):
            return parse_codex
        if isinstance(whole, dict) and isinstance(whole.get("messages"), list):
            return parse_openai_messages
    head = first_records(text)
    for record in head:
        if record.get("type") in _CODEX_TYPES and isinstance(record.get("payload"), dict):
            return parse_codex
        if "sessionId" in record or (
            record.get("type") in _CLAUDE_TYPES and ("message" in record or "leafUuid" in record)
        ):
            return parse_claude_code
    if head and head[0].get("type") is None and "id" in head[0] and ("instructions" in head[0] or "git" in head[0]):
        return parse_codex
    raise TranscriptError(
        f"{name}: not a transcript we can read"
        " (Claude Code session JSONL, Codex rollout JSONL, or OpenAI messages JSON)"
    )


def parse_bytes(name: str, data: bytes) -> list[Session]:
    """The sessions in one transcript file's bytes."""
    if len(data) > MAX_FILE_BYTES:
        raise TranscriptError(f"{name}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
    if b"\x00" in data[:4096]:
        raise TranscriptError(f"{name}: a binary file, not a transcript")
    text = data.decode("utf-8-sig", errors="replace")
    if not text.strip():
        raise TranscriptError(f"{name}: empty file")
    return _parser_for(text, name)(text, source_name=name)


def parse_path(path: Path, *, rejected: Rejected = None) -> list[Session]:
    """The sessions in a transcript file, or in every *.jsonl / *.json file under a directory (walked recursively,
    in name order). A single file that cannot be read raises TranscriptError; in a directory such a file is passed
    over and, when `rejected` is given, added to it as (name, reason)."""
    path = Path(path)
    if path.is_dir():
        sessions: list[Session] = []
        files = sorted((p for p in path.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES)), key=str)
        for file in files:
            try:
                sessions += _parse_file(file, str(file.relative_to(path)))
            except TranscriptError as error:
                _reject(rejected, str(file.relative_to(path)), str(error))
        return sessions
    return _parse_file(path, str(path))


def _parse_file(path: Path, name: str) -> list[Session]:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise TranscriptError(f"{name}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
        data = path.read_bytes()
    except OSError as error:
        raise TranscriptError(f"{name}: cannot be read ({error.strerror or error})") from None
    return parse_bytes(name, data)


def _reject(rejected: Rejected, name: str, reason: str) -> None:
    if rejected is not None:
        rejected.append((name, reason))


def parse_upload(
    name: str,
    data: bytes,
    *,
    rejected: Rejected = None,
    max_members: int = MAX_MEMBERS,
    max_member_bytes: int = MAX_FILE_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
) -> list[Session]:
    """The sessions in an uploaded .jsonl/.json file, or in the .jsonl/.json members of a .zip or .tar(.gz) archive
    (an archive of `~/.claude/projects`, say). Raises TranscriptError for an unreadable file or archive, a member
    name outside the archive, or an archive over the member or total size limits; a member that is too big or is
    not a transcript is passed over and added to `rejected`."""
    if data[:4] == b"PK\x03\x04" or name.lower().endswith(".zip"):
        members = _zip_members(data, max_members, max_member_bytes, max_total_bytes, rejected)
    elif data[:2] == b"\x1f\x8b" or name.lower().endswith((".tar", ".tar.gz", ".tgz")):
        members = _tar_members(data, max_members, max_member_bytes, max_total_bytes, rejected)
    elif name.lower().endswith(SUFFIXES):
        if len(data) > max_member_bytes:
            raise TranscriptError(f"{name}: larger than the {max_member_bytes} byte limit")
        return parse_bytes(name, data)
    else:
        raise TranscriptError(f"{name}: send a .jsonl or .json transcript, or a .zip or .tar.gz archive of them")
    sessions: list[Session] = []
    for member, content in members:
        try:
            sessions += parse_bytes(member, content)
        except TranscriptError as error:
            _reject(rejected, member, str(error))
    return sessions


def _safe_name(name: str) -> str:
    """The member's name, or TranscriptError when it could land outside the archive's folder."""
    unified = name.replace("\\", "/")
    parts = PurePosixPath(unified).parts
    if not name or "\x00" in name or unified.startswith("/") or ".." in parts or (len(name) > 1 and name[1] == ":"):
        raise TranscriptError(f"archive member {name!r} points outside the archive; the upload is refused")
    return unified


def _zip_members(
    data: bytes, max_members: int, max_member_bytes: int, max_total_bytes: int, rejected: Rejected
) -> list[tuple[str, bytes]]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise TranscriptError(f"not a readable zip archive ({error})") from None
    if len(infos) > max_members:
        raise TranscriptError(f"the archive has {len(infos)} members; the limit is {max_members}")
    for info in infos:
        _safe_name(info.filename)
    found: list[tuple[str, bytes]] = []
    total = 0
    for info in infos:
        name = info.filename
        if info.is_dir():
            continue
        problem = (
            "a link or special file, not a transcript"
            if stat.S_ISLNK(info.external_attr >> 16)
            else "not a .jsonl or .json file"
            if not name.endswith(SUFFIXES)
            else f"larger than the {max_member_bytes} byte limit"
            if info.file_size > max_member_bytes
            else None
        )
        if problem:
            _reject(rejected, name, problem)
            continue
        try:
            with archive.open(info) as handle:
                content = handle.read(max_member_bytes + 1)  # the header's size may lie: read no more than allowed
        except (RuntimeError, zipfile.BadZipFile, zlib.error, OSError, NotImplementedError) as error:
            _reject(rejected, name, f"cannot be read ({error})")
            continue
        if len(content) > max_member_bytes:
            _reject(rejected, name, f"larger than the {max_member_bytes} byte limit")
            continue
        total += len(content)
        if total > max_total_bytes:
            raise TranscriptError(f"the archive expands beyond {max_total_bytes} bytes")
        found.append((name, content))
    return found


def _gunzip(data: bytes, limit: int) -> bytes:
    """Inflate gzip (possibly several concatenated members) with a ceiling."""
    out = bytearray()
    rest = data
    while rest:
        inflater = zlib.decompressobj(wbits=31)
        try:
            out += inflater.decompress(rest, limit + 1 - len(out))
        except zlib.error as error:
            raise TranscriptError(f"not a readable gzip archive ({error})") from None
        if len(out) > limit or inflater.unconsumed_tail:
            raise TranscriptError(f"the archive expands beyond {limit} bytes")
        if not inflater.eof:
            raise TranscriptError("the gzip archive is cut short")
        rest = inflater.unused_data
    return bytes(out)


def _tar_members(
    data: bytes, max_members: int, max_member_bytes: int, max_total_bytes: int, rejected: Rejected
) -> list[tuple[str, bytes]]:
    # Headers and padding take up to 1.5 kB a member on top of the content.
    plain = _gunzip(data, max_total_bytes + 1536 * max_members) if data[:2] == b"\x1f\x8b" else data
    found: list[tuple[str, bytes]] = []
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(plain), mode="r:") as archive:
            for count, member in enumerate(archive, start=1):
                if count > max_members:
                    raise TranscriptError(f"the archive has more than {max_members} members")
                name = _safe_name(member.name)
                if member.isdir():
                    continue
                if not member.isfile():
                    _reject(rejected, name, "a link or special file, not a transcript")
                elif not name.endswith(SUFFIXES):
                    _reject(rejected, name, "not a .jsonl or .json file")
                elif member.size > max_member_bytes:
                    _reject(rejected, name, f"larger than the {max_member_bytes} byte limit")
                else:
                    handle = archive.extractfile(member)
                    content = handle.read(max_member_bytes + 1) if handle else b""
                    total += len(content)
                    if total > max_total_bytes:
                        raise TranscriptError(f"the archive expands beyond {max_total_bytes} bytes")
                    found.append((name, content))
    except (tarfile.TarError, OSError, EOFError) as error:
        raise TranscriptError(f"not a readable tar archive ({error})") from None
    return found
