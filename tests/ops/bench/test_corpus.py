"""`atrium bench search --texts FILE [--query-texts FILE]`: the big palace holds the file's lines with their real
embeddings, the queries are real texts, the vectors are kept beside the file and embedded anew when it changes, and a
file that cannot serve is refused with a message before anything is built."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db.models import Count

from memory.models import Memory
from ops.bench.corpus import CorpusError, cache_path, load_corpus
from palace.models import Palace

TOPICS = ["the deploy", "the backup", "the login page", "the search index", "the invoice run", "the release notes"]
VERBS = ["broke after", "was fixed by", "got slower after", "needs a test for", "was rewritten for", "depends on"]
CAUSES = ["the Redis upgrade", "a missing index", "the new token format", "a timezone bug", "the move to Django 5"]


def _lines(n: int) -> list[str]:
    return [
        f"Note {i}: {TOPICS[i % 6]} {VERBS[(i // 6) % 6]} {CAUSES[(i // 36) % 5]}, ticket {1000 + i}." for i in range(n)
    ]


class CountingEmbedder:
    """Deterministic vectors from the text (a hash), counting the lines it embeds."""

    name = "counting-test"

    def __init__(self) -> None:
        self.embedded = 0

    def passages(self, texts: list[str]) -> np.ndarray:
        self.embedded += len(texts)
        rows = [np.random.default_rng(abs(hash(t)) % 2**32).normal(size=8) for t in texts]
        return np.asarray(rows, dtype=np.float32)


def test_the_vectors_are_kept_beside_the_file_extended_and_embedded_anew_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("\n".join(_lines(50)) + "\n\n   \n", encoding="utf-8")  # blank lines are not memories
    embedder, said = CountingEmbedder(), []

    first = load_corpus(path=path, rows=30, embedder=embedder, say=said.append)
    assert (first.embedded_now, embedder.embedded, len(first.texts), len(first.held_out)) == (30, 30, 30, 20)
    assert first.texts == _lines(30) and first.held_out == _lines(50)[30:]
    assert cache_path(path, "counting-test").exists()

    again = load_corpus(path=path, rows=30, embedder=embedder, say=said.append)
    assert (again.embedded_now, embedder.embedded) == (0, 30)  # from the cache, not embedded again
    np.testing.assert_array_equal(again.vectors, first.vectors)

    more = load_corpus(path=path, rows=45, embedder=embedder, say=said.append)
    assert (more.embedded_now, embedder.embedded, len(more.vectors)) == (15, 45, 45)  # only the new lines
    np.testing.assert_array_equal(more.vectors[:30], first.vectors)

    path.write_text("\n".join(["A line that was not there before.", *_lines(50)]), encoding="utf-8")
    changed = load_corpus(path=path, rows=30, embedder=embedder, say=said.append)
    assert (changed.embedded_now, embedder.embedded) == (30, 75)  # the cached vectors belong to other lines
    assert any("changed since its vectors were cached" in line for line in said)
    assert changed.texts[0] == "A line that was not there before."

    with pytest.raises(CorpusError, match=r"has 51 non-empty lines; the bench palaces need 52"):
        load_corpus(path=path, rows=52, embedder=embedder, say=said.append)
    with pytest.raises(CorpusError, match="no such file"):
        load_corpus(path=tmp_path / "missing.txt", rows=1, embedder=embedder, say=said.append)


def _bench(*args: str, monkeypatch: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    from ops.bench import search as bench

    seen: dict[str, Any] = {"queries": []}
    real_sizes, real_search = bench.sizes, bench.memory_search

    def sizes_and_rows() -> dict[str, Any]:  # right after the load
        biggest = Memory.objects.values("palace_id").annotate(n=Count("id")).order_by("-n").first()
        seen["big"] = dict(
            Memory.objects.filter(palace_id=biggest["palace_id"]).values_list("content", "embedding")  # type: ignore[index]
        )
        seen["all"] = set(Memory.objects.values_list("content", flat=True))
        return real_sizes()

    def recording(*, user: Any, request: Any) -> Any:
        seen["queries"].append(request.query)
        return real_search(user=user, request=request)

    monkeypatch.setattr(bench, "sizes", sizes_and_rows)
    monkeypatch.setattr(bench, "memory_search", recording)
    out = StringIO()
    call_command(
        "bench", "search", "--memories", "120", "--palaces", "3", "--recall-sample", "5", "--queries", "4",
        "--saves", "2", *args, "--json", stdout=out, stderr=StringIO(),
    )  # fmt: skip
    return json.loads(out.getvalue()), seen


def test_bench_search_with_texts_loads_the_files_lines_with_their_real_vectors(
    db: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    from memory.providers import embed_passages

    path = tmp_path / "notes.txt"
    lines = _lines(230)
    lines[3] = "A docstring quoting a NUL: '\x00' (PostgreSQL text cannot hold it)."  # a real file's line did
    lines[150] = lines[150] + " \x00"
    path.write_text("\n".join(lines), encoding="utf-8")

    data, seen = _bench("--texts", str(path), monkeypatch=monkeypatch)

    lines = [line.replace("\x00", "") for line in lines]  # stored without it, as a save stores it
    assert lines[3] == "A docstring quoting a NUL: '' (PostgreSQL text cannot hold it)."
    assert set(seen["big"]) == set(lines[:120])  # the big palace holds the file's first 120 lines
    assert seen["all"] == set(lines[:180])  # and the three small palaces the next 60
    np.testing.assert_allclose(np.asarray(seen["big"][lines[7]]), embed_passages([lines[7]])[0], atol=1e-5)
    held_out = set(lines[180:])
    owner = seen["queries"][:14]  # 10 warm-up and 4 measured searches; then repeats, and the member's 14 others
    assert len(set(owner)) == 14 and set(seen["queries"]) <= held_out and len(set(seen["queries"])) == 28
    texts = data["texts"]
    assert (texts["file"], texts["rows"], texts["embedded_now"]) == (str(path), 180, 180)
    assert texts["palaces"] == "the big palace the first 120 lines, 3 small ones the next 60"
    assert "held out" in texts["queries"] and texts["vectors"].startswith("real ")
    assert data["recall_detail"]["owner"]["queries"] == 5 and 0 <= data["vector_recall"] <= 1
    assert data["synthetic"]["vectors"] == "their real embeddings"
    assert data["vector_recall_on"] == f"real multilingual-e5-small embeddings of {path}"
    with np.load(texts["cache"]) as kept:
        assert kept["vectors"].shape == (180, 384)

    # a second run takes the vectors from the file's cache; --query-texts sets the queries
    asked = tmp_path / "questions.txt"
    asked.write_text("Why did the deploy break?\nWhat slowed the search index?\n", encoding="utf-8")
    data, seen = _bench("--texts", str(path), "--query-texts", str(asked), monkeypatch=monkeypatch)
    assert data["texts"]["embedded_now"] == 0 and data["texts"]["embed_seconds"] == 0
    assert set(seen["queries"][:14]) == {"Why did the deploy break?", "What slowed the search index?"}
    assert data["texts"]["queries"] == f"the lines of {asked}, embedded as queries"
    assert not Memory.objects.exists()  # the bench removed its palaces


@pytest.mark.parametrize(
    ("lines", "query_file", "message"),
    [
        (40, None, r"--texts/--query-texts: .* has 40 non-empty lines; the bench palaces need 180"),
        (180, None, r"no query texts: .* after its first 180 lines has no non-empty lines"),
        (230, "missing.txt", r"missing.txt: no such file"),
        (230, "empty.txt", r"no query texts: .*empty.txt has no non-empty lines"),
    ],
)
def test_bench_search_refuses_a_texts_file_that_cannot_serve(
    db: Any, tmp_path: Path, monkeypatch: Any, lines: int, query_file: str | None, message: str
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("\n".join(_lines(lines)), encoding="utf-8")
    (tmp_path / "empty.txt").write_text("\n  \n", encoding="utf-8")
    before = (Palace.objects.count(), get_user_model().objects.count())
    extra = ["--query-texts", str(tmp_path / query_file)] if query_file else []
    with pytest.raises(CommandError, match=message):
        _bench("--texts", str(path), *extra, monkeypatch=monkeypatch)
    assert (Palace.objects.count(), get_user_model().objects.count()) == before  # refused before building
    assert list(tmp_path.glob("*.npz")) == []  # and before embedding a line
