"""REST distillation jobs (api/routers/distill.py): `POST /api/v1/distill/jobs` queues a run for the Celery worker and
answers at once (202 `queued`, or 200 `inline` when the worker finished within the short wait); `GET
/api/v1/distill/jobs/{id}` reads it, for the person who started it only (issue 24, Medium 5)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memory.jobs import distill_job as distill_job_module
from memory.jobs import distill_job_run
from memory.models import DistillJob, Memory
from palace.models import OpLog, Palace
from tests.api.conftest import Api
from tests.conftest import PROJECT_ORIGIN
from tests.fakes.memories import make_memory, topic_vectors

URL = "/api/v1/distill/jobs"
BOUND_S = 90


def _cluster(palace: Palace, *, seed: int = 7) -> list[Memory]:
    return [
        make_memory(palace, content=f"Backups rotate weekly, note {i}.", kind="decision", embedding=v)
        for i, v in enumerate(topic_vectors(3, seed=seed))
    ]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_runs_a_rest_distill_job_and_only_its_starter_reads_it(
    api_for: Callable[..., Api],
    alice: Any,
    charlie: Any,
    monkeypatch: pytest.MonkeyPatch,
    worker: tuple[subprocess.Popen[bytes], str, Path],
) -> None:
    _, _, log = worker
    members = _cluster(Palace.objects.get(personal_owner=alice))
    monkeypatch.setattr(distill_job_module, "INLINE_WAIT_S", 0)
    api = api_for(alice)
    status, body = api.post(URL, {"mode": "apply"})
    assert status == 202 and body["delivery"] == "queued" and body["clusters"] == [], body
    job_id = body["id"]
    deadline = time.monotonic() + BOUND_S
    while True:
        status, body = api.get(f"{URL}/{job_id}")
        assert status == 200, body
        if body["state"] in ("done", "failed") or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert body["state"] == "done", (body, log.read_text()[-3000:])
    assert body["delivery"] == "lookup" and body["applied"] == 1 and body["llm_configured"] is False
    (cluster,) = body["clusters"]
    assert cluster["member_ids"] == [m.pk for m in members]
    assert Memory.objects.get(pk=cluster["rule_id"]).source_kind == "distill"
    assert OpLog.objects.get(op="memory.distill", target_id=cluster["rule_id"]).actor_user_id == alice.pk
    # Charlie: the same 404 as a job that does not exist; alice's reads above are the positive control.
    theirs, missing = api_for(charlie).get(f"{URL}/{job_id}"), api_for(charlie).get(f"{URL}/{job_id + 1000}")
    assert theirs[0] == missing[0] == 404
    assert theirs[1]["error"]["message"].replace(str(job_id), "N") == missing[1]["error"]["message"].replace(
        str(job_id + 1000), "N"
    )

    monkeypatch.setattr(distill_job_module, "INLINE_WAIT_S", BOUND_S)
    _cluster(Palace.objects.get(personal_owner=alice), seed=11)
    status, inline = api.post(URL, {"mode": "suggest"})
    assert status == 200 and (inline["state"], inline["delivery"]) == ("done", "inline"), inline
    assert len(inline["clusters"]) == 1 and inline["clusters"][0]["rule_id"] is None


def test_rest_distill_job_is_queued_at_once_and_read_only_by_its_starter(
    api_for: Callable[..., Api], alice: Any, bob: Any, charlie: Any, project: Palace
) -> None:
    """No worker: the route answers 202 at once (the test does the worker's part). Bob, a viewer of the project,
    reads the project but not alice's job; charlie neither."""
    members = _cluster(project)
    status, body = api_for(alice).post(URL, {"mode": "suggest", "project": PROJECT_ORIGIN})
    assert status == 202 and (body["state"], body["delivery"], body["llm_configured"]) == ("queued", "queued", None)
    job = DistillJob.objects.get(pk=body["id"])
    assert (job.user_id, job.palace_id, job.mode) == (alice.pk, project.pk, "suggest")
    distill_job_run(job_id=job.pk)
    status, done = api_for(alice).get(f"{URL}/{job.pk}")
    assert status == 200 and done["state"] == "done" and done["clusters"][0]["member_ids"] == [m.pk for m in members]
    assert api_for(alice, scope="read").get(f"{URL}/{job.pk}")[0] == 200  # reading needs no write token
    missing = api_for(charlie).get(f"{URL}/{job.pk + 1000}")
    assert missing[0] == 404
    for outsider in (bob, charlie):
        status, refused = api_for(outsider).get(f"{URL}/{job.pk}")
        assert status == 404 and "Backups" not in str(refused)
        assert refused["error"]["message"].replace(str(job.pk), "N") == missing[1]["error"]["message"].replace(
            str(job.pk + 1000), "N"
        )


def test_rest_distill_job_refuses_bad_input_and_readers(
    api_for: Callable[..., Api], alice: Any, bob: Any, project: Palace
) -> None:
    api = api_for(alice)
    assert api.post(URL, {"mode": "explode"})[0] == 422
    assert api.post(URL, {"mode": "apply", "palace": project.pk, "project": PROJECT_ORIGIN})[0] == 422
    assert api.post(URL, {"mode": "apply", "weird": 1})[0] == 422
    assert api_for(alice, scope="read").post(URL, {"mode": "apply"})[0] == 403
    assert api_for(bob).post(URL, {"mode": "apply", "project": PROJECT_ORIGIN})[0] == 403  # a viewer
    assert api.post(URL, {"mode": "apply", "project": "https://example.test/no/such"})[0] == 404
    for bad in ("0", str(2**63), str(10**30)):
        assert api.get(f"{URL}/{bad}")[0] == 404, bad
    assert DistillJob.objects.count() == 0
    assert api.post(URL, {"mode": "apply", "project": PROJECT_ORIGIN})[0] == 202  # the positive control
    assert DistillJob.objects.count() == 1


def test_an_unreachable_task_queue_fails_the_job_with_its_reason(
    api_for: Callable[..., Api], alice: Any, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    """Redis down: the job is failed with a reason its person can read, never a 500 nor a job queued forever."""
    from memory import tasks

    # The process's Celery app (config/celery_app.py) has its broker from Django's start: point it at a port where
    # nothing listens, with no pooled connection to the real one (Celery keeps them on the app; put back after).
    app = tasks.distill_job_task.app
    monkeypatch.setattr(app.conf, "broker_url", "redis://127.0.0.1:1/0")
    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    with django_capture_on_commit_callbacks(execute=True):
        status, body = api_for(alice).post(URL, {"mode": "suggest"})
    app.pool.force_close_all()
    assert status == 202, body  # inside the test's transaction the route cannot wait: the send comes at commit
    status, job = api_for(alice).get(f"{URL}/{body['id']}")
    assert status == 200 and job["state"] == "failed" and "task queue (Redis) is unreachable" in job["error"], job
    assert DistillJob.objects.get(pk=body["id"]).finished_at is not None
