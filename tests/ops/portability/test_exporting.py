"""Exports (ops/portability/exporting.py, ops/portability/markdown.py): complete, bounded by what the person may read,
and a redacted view that holds no secret and no string over 40 characters."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from ops.portability import PREVIEW_CHARS, SECTIONS, export_document, markdown_zip
from palace.errors import NotFound
from palace.models import Palace
from tests.conftest import PROJECT_ORIGIN
from tests.ops.portability.world import SECRET_KEY, SECRET_TOKEN, build_world


@pytest.fixture
def world(alice: Any) -> dict[str, Any]:
    return build_world(alice, alice.personal_palace)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


def test_json_export_carries_every_section_with_all_fields(world: dict[str, Any], alice: Any) -> None:
    document = export_document(user=alice)
    (section,) = document["palaces"]
    assert section["kind"] == "personal" and section["owner"] == "alice"
    assert {s: bool(section[s]) for s in SECTIONS} == dict.fromkeys(SECTIONS, True)
    memories = {m["id"]: m for m in section["memories"]}
    newer = memories[world["newer"].pk]
    assert newer["supersedes"] == world["first"].pk and newer["version"] == 2
    assert memories[world["first"].pk]["status"] == "superseded"  # the old version is in it too
    assert memories[world["gone"].pk]["epitaph"] == "obsolete"
    assert len(newer["embedding"]) == 384 and document["embedding"]["vectors_included"] is True
    assert "search_vector" not in newer and newer["search_text"]
    (card,) = section["review_cards"]
    assert card["memory"] == newer["id"] and card["repetitions"] == 1
    assert [f["replaces"] for f in section["facts"]] == [None, section["facts"][0]["id"]]
    assert section["handoffs"][0]["user"] == "alice" and section["facts"][0]["created_by"] == "alice"
    assert {"palace.create", "memory.correct", "review.grade"} <= {r["op"] for r in section["oplog"]}
    json.dumps(document)  # serialisable as it is


def test_outsider_exports_nothing_of_a_project_the_owner_gets_it(project: Palace, alice: Any, charlie: Any) -> None:
    build_world(alice, project)
    owners = export_document(user=alice, project=PROJECT_ORIGIN)
    assert [p["origin"] for p in owners["palaces"]] == [project.origin_key]
    assert len(owners["palaces"][0]["memories"]) == 4  # the positive control
    with pytest.raises(NotFound):
        export_document(user=charlie, project=PROJECT_ORIGIN)
    with pytest.raises(NotFound):  # answers like a project that does not exist
        export_document(user=charlie, project="github.com/nobody/nothing")
    everything = export_document(user=charlie)
    assert [p["owner"] for p in everything["palaces"]] == ["charlie"]
    assert SECRET_KEY not in json.dumps(everything) and "deploy" not in json.dumps(everything)


def test_everything_readable_covers_personal_and_project_palaces(project: Palace, bob: Any) -> None:
    document = export_document(user=bob)  # bob: his own palace and the project he views
    assert sorted(p["kind"] for p in document["palaces"]) == ["personal", "project"]


def test_redacted_view_holds_no_secret_and_no_string_over_40_characters(world: dict[str, Any], alice: Any) -> None:
    full = json.dumps(export_document(user=alice))
    assert SECRET_KEY in full and SECRET_TOKEN in full  # the control: the stored rows do hold them
    document = export_document(user=alice, redacted=True)
    text = json.dumps(document, ensure_ascii=False)
    assert SECRET_KEY not in text and SECRET_TOKEN not in text
    assert SECRET_KEY[:12] not in text  # not even a prefix survives the cut
    strings = _strings(document["palaces"])
    assert max(len(s) for s in strings) <= PREVIEW_CHARS
    leak = next(m for m in document["palaces"][0]["memories"] if m["id"] == world["leak"].pk)
    assert leak["content"].startswith("[REDACTED:openai_key]") and len(leak["content"]) == PREVIEW_CHARS
    assert "embedding" not in leak and "search_text" not in leak
    assert all("detail" not in row for row in document["palaces"][0]["oplog"])
    assert document["redacted"] is True and document["embedding"]["vectors_included"] is False
    vault = markdown_zip(document)
    with zipfile.ZipFile(io.BytesIO(vault)) as archive:
        assert not any(SECRET_KEY in archive.read(n).decode() for n in archive.namelist())


def test_markdown_vault_has_one_file_per_memory_with_front_matter_and_backlinks(
    world: dict[str, Any], alice: Any
) -> None:
    document = export_document(user=alice)
    with zipfile.ZipFile(io.BytesIO(markdown_zip(document))) as archive:
        names = set(archive.namelist())
        memory_files = {n for n in names if n.endswith(".md") and n.rsplit("/", 1)[-1][:-3].isdigit()}
        assert len(memory_files) == 4
        newer = archive.read(f"personal-alice/{world['newer'].pk}.md").decode()
        index = archive.read("personal-alice/index.md").decode()
    front, body = newer.split("---\n", 2)[1:]
    assert f"id: {world['newer'].pk}" in front and 'status: "active"' in front and "version: 2" in front
    assert f'supersedes: "[[{world["first"].pk}]]"' in front
    assert "the deploy runs on Thursdays now" in body
    assert f"related ← [[{world['leak'].pk}]]" in body and f"supersedes [[{world['first'].pk}]]" in body
    assert f"[[{world['gone'].pk}]]" in index


def test_export_command_writes_json_and_markdown(world: dict[str, Any], alice: Any, tmp_path: Path) -> None:
    out = io.StringIO()
    call_command("export", "--user", "alice", "--format", "json", "--out", str(tmp_path / "a.json"), stdout=out)
    assert "4 memories" in out.getvalue()
    assert json.loads((tmp_path / "a.json").read_text())["exported_by"] == "alice"
    call_command(
        "export",
        "--user",
        "alice",
        "--format",
        "markdown",
        "--redacted",
        "--out",
        str(tmp_path / "a.zip"),
        stdout=io.StringIO(),
    )
    assert zipfile.is_zipfile(tmp_path / "a.zip")
