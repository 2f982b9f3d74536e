"""The Backfill view in Chromium with a real Celery worker: a real upload of the test transcripts, the estimate
shown, Run, the progress card reaching done through the live push (no reload), and the memories stored."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from capture.models import BackfillRun, CaptureTurn
from memory.models import Memory
from palace.models import Palace
from tests.panel.browserkit import BROWSER_TEST, login, shot

pytestmark = BROWSER_TEST

TRANSCRIPTS = Path(__file__).resolve().parent.parent / "capture" / "transcripts"
DEMO = TRANSCRIPTS / "claude-code" / "-home-alice-src-demo"
MAP = "/home/alice/src/demo=github.com/atrium-test/demo"
BOUND_MS = 240_000  # the worker loads the embedder, then runs the batches on 2 busy cores


def test_upload_estimate_run_and_watch_it_finish_live(
    asgi_server: str,
    browser_page: Any,
    alice: Any,
    project: Palace,
    worker: tuple[subprocess.Popen[bytes], str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from capture.tasks import backfill_run
    from panel.views import backfill as view

    _, _, log = worker
    # The view's queueing is held back (the server runs in this process), so the page is on screen, showing the
    # run queued, before the worker starts: the card can only reach "done" through the live push.
    held: list[int] = []
    monkeypatch.setattr(view, "_queue", held.append)
    page, base = browser_page, asgi_server
    login(page, base, "alice")
    page.click("nav.mainnav >> text=Backfill")
    page.wait_for_url(f"{base}/backfill/")
    page.set_input_files("#bf-files", sorted(str(p) for p in DEMO.glob("*.jsonl")))
    page.fill("#bf-window", "0")
    page.fill("#bf-mappings", MAP)
    page.click("#bf-estimate-button")
    summary = page.locator("#bf-estimate-summary")
    summary.wait_for()
    assert "2 of 3 sessions" in summary.inner_text()
    goes_to = page.locator("#bf-sessions tbody td:nth-child(4)").all_inner_texts()
    assert sorted(t.split(" ")[0] for t in goes_to) == ["github.com/atrium-test/demo"] * 2 + ["skipped:"]
    assert not BackfillRun.objects.exists()  # an estimate stores nothing
    shot(page, "backfill-estimate")

    page.click("#bf-run-button")
    page.wait_for_url(f"{base}/backfill/?run=*")
    run = BackfillRun.objects.get(user=alice)
    card = page.locator(f"#bf-run-{run.pk}")
    card.wait_for()
    assert held == [run.pk] and card.get_attribute("data-state") == "queued"
    backfill_run.delay(run.pk)  # what the view would have done
    started = time.monotonic()
    try:
        page.wait_for_selector(f'#bf-run-{run.pk}[data-state="done"]', timeout=BOUND_MS)
    except Exception:
        pytest.fail(f"the run did not reach done on the page:\n{log.read_text()[-3000:]}")
    print(f"run done on the page {time.monotonic() - started:.1f} s after Run")
    text = card.inner_text()
    run.refresh_from_db()
    total = run.counts["turns_total"]
    assert f"{total} / {total} turns" in text and "the rules" in text  # labelled: no model configured
    assert page.locator(f"#bf-run-{run.pk} progress").get_attribute("value") == str(total)
    shot(page, "backfill-done")

    assert run.state == "done" and not CaptureTurn.objects.filter(session__backfill_run=run, state="pending").exists()
    saved = Memory.objects.filter(palace=project, source_kind="backfill")
    assert saved.count() == run.counts["memories"] > 0
    assert saved.filter(kind="episode").exists()
