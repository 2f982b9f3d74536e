"""REST door to the stored distillation proposals (memory.jobs.distill): list, apply, reject.

The scheduled distillation in suggest mode keeps each cluster it finds as a pending proposal; applying one runs the
same code as `memory_distill apply`. A proposal of a palace the caller may not write answers 404 like one that
does not exist.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Query, Router, Schema
from pydantic import ConfigDict

from api.auth import caller_of
from api.schemas import ErrorOut
from memory.jobs import distill_proposal_apply, distill_proposal_reject
from memory.models import DistillProposal
from memory.selectors import distill_proposals
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
