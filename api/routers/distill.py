"""REST door to distillation (memory.jobs): a run on the worker (jobs), and the stored proposals (list, apply,
reject).

`POST /jobs` queues a distillation of one palace for the background worker (clustering is quadratic in a palace's
memories: never on a request thread) and answers at once: 200 with the result when the worker finished within a
short wait (`delivery: inline`), else 202 with the job's id (`delivery: queued`); `GET /jobs/{id}` reads its state
and result. Only the person who started a job reads it; anyone else gets the 404 of a job that does not exist.

The scheduled distillation in suggest mode keeps each cluster it finds as a pending proposal; applying one runs the
same code as `memory_distill apply`. A proposal of a palace the caller may not write answers 404 like one that
does not exist.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Query, Router, Schema, Status
from pydantic import ConfigDict

from api.auth import caller_of
from api.schemas import (
    DistillClusterFields,
    DistillDelivery,
    DistillJobState,
    DistillMode,
    ErrorOut,
    ProjectOrigin,
    distill_job_answer,
)
from memory.jobs import (
    distill_job_get,
    distill_job_wait,
    distill_proposal_apply,
    distill_proposal_reject,
)
from memory.models import DistillJob, DistillProposal
from memory.selectors import distill_proposals
from memory.tasks import distill_job_queue
from palace.errors import InvalidInput
from palace.selectors import palace_get

router = Router(tags=["distill"])
ERRORS: dict[int, Any] = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut, 422: ErrorOut}


class ProposalOut(Schema):
    id: int
    palace: int
    kind: str
    member_ids: list[int]
    content: str
    placard: str
    producer: str
    fallback: str
    min_similarity: float
    status: str
    rule: int | None
    reason: str
    decided_by: int | None
    decided_at: datetime | None
    created_at: datetime


class ProposalQuery(Schema):
    palace: int | None = None
    project: str | None = None
    status: Literal["pending", "applied", "rejected", "any"] = "pending"


class RejectIn(Schema):
    model_config = ConfigDict(extra="forbid")
    reason: str = ""


def proposal_out(p: DistillProposal) -> dict[str, Any]:
    return {
        "id": p.pk,
        "palace": p.palace_id,
        "kind": p.kind,
        "member_ids": [int(i) for i in p.member_ids],
        "content": p.content,
        "placard": p.placard,
        "producer": p.producer,
        "fallback": p.fallback,
        "min_similarity": p.min_similarity,
        "status": p.status,
        "rule": p.rule_id,
        "reason": p.reason,
        "decided_by": p.decided_by_id,
        "decided_at": p.decided_at,
        "created_at": p.created_at,
    }


@router.get("/proposals", response={200: list[ProposalOut], **ERRORS})
def proposals_list(request: HttpRequest, filters: Query[ProposalQuery]) -> list[dict[str, Any]]:
    """Distillation proposals of the palaces you may read (or of `palace` / `project`), newest first."""
    caller = caller_of(request)
    palace_ids = None
    if filters.palace is not None or filters.project is not None:
        palace_ids = [palace_get(user=caller.user, palace_id=filters.palace, origin=filters.project).pk]
    status = None if filters.status == "any" else filters.status
    rows = distill_proposals(user=caller.user, palace_ids=palace_ids, status=status)
    return [proposal_out(p) for p in rows]


@router.post("/proposals/{int:proposal_id}/apply", response={200: ProposalOut, **ERRORS})
def proposals_apply(request: HttpRequest, proposal_id: int) -> dict[str, Any]:
    """Apply a pending proposal (the rule is written now, by the LLM when configured); 409 when a member changed."""
    caller = caller_of(request)
    caller.require_write()
    return proposal_out(distill_proposal_apply(proposal_id=proposal_id, actor=caller.actor))


@router.post("/proposals/{int:proposal_id}/reject", response={200: ProposalOut, **ERRORS})
def proposals_reject(request: HttpRequest, proposal_id: int, payload: RejectIn) -> dict[str, Any]:
    """Reject a pending proposal; the same member set is not proposed again."""
    caller = caller_of(request)
    caller.require_write()
    return proposal_out(distill_proposal_reject(proposal_id=proposal_id, actor=caller.actor, reason=payload.reason))


# --- jobs on the worker --------------------------------------------------------------------------------------------


class JobIn(Schema):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["suggest", "apply"] = "suggest"
    palace: int | None = None
    project: ProjectOrigin | None = None


class ClusterOut(Schema, DistillClusterFields):
    pass


class JobOut(Schema):
    id: int
    state: DistillJobState
    delivery: DistillDelivery
    mode: DistillMode
    palace: int
    llm_configured: bool | None
    applied: int
    clusters: list[ClusterOut]
    error: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


def job_out(job: DistillJob, *, delivery: str) -> dict[str, Any]:
    return {
        "id": job.pk,
        "palace": job.palace_id,
        **distill_job_answer(job, delivery=delivery),
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
    }


@router.post("/jobs", response={200: JobOut, 202: JobOut, **ERRORS})
def jobs_start(request: HttpRequest, payload: JobIn) -> Status[dict[str, Any]]:
    """Distill `palace` / `project` (else your personal palace) on the worker: 200 with the result when it finished
    within a short wait (`delivery: inline`), else 202 (`delivery: queued`): read it at GET /jobs/{id}."""
    caller = caller_of(request)
    caller.require_write()
    if payload.palace is not None and payload.project is not None:
        raise InvalidInput("give palace or project, not both")
    palace = palace_get(user=caller.user, palace_id=payload.palace, origin=payload.project, write=True)
    job = distill_job_wait(job=distill_job_queue(palace=palace, actor=caller.actor, mode=payload.mode))
    if job.state in (DistillJob.State.DONE, DistillJob.State.FAILED):
        return Status(200, job_out(job, delivery="inline"))
    return Status(202, job_out(job, delivery="queued"))


@router.get("/jobs/{int:job_id}", response={200: JobOut, **ERRORS})
def jobs_get(request: HttpRequest, job_id: int) -> dict[str, Any]:
    """A distillation job you started: its state, and its result once done (404 for anyone else's)."""
    caller = caller_of(request)
    return job_out(distill_job_get(user=caller.user, job_id=job_id), delivery="lookup")
