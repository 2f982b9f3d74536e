"""The background jobs that keep a palace healthy, each a plain idempotent service (memory/tasks.py and the
management commands are thin doors over them): decay (decay.py), distillation with its proposals and reverts
(distill.py), a person's distillation run on the worker (distill_job.py), the embedding backfill
(embeddings_backfill.py), the slot backfill (slots_backfill.py) and the ageing out of access records
(retention.py)."""

from __future__ import annotations

from memory.jobs.backfill import BackfillResult, embeddings_backfill, slots_backfill
from memory.jobs.decay import DecayResult, decay_run
from memory.jobs.distill import (
    DistillCluster,
    DistillResult,
    DistillRevert,
    distill_proposal_apply,
    distill_proposal_reject,
    distill_proposals_store,
    distill_revert,
    distill_run,
)
from memory.jobs.distill_job import (
    distill_job_get,
    distill_job_result,
    distill_job_run,
    distill_job_start,
    distill_job_wait,
    distill_jobs_sweep,
)
from memory.jobs.retention import RetentionResult, access_records_prune

__all__ = [
    "BackfillResult",
    "DecayResult",
    "DistillCluster",
    "DistillResult",
    "DistillRevert",
    "RetentionResult",
    "access_records_prune",
    "decay_run",
    "distill_job_get",
    "distill_job_result",
    "distill_job_run",
    "distill_job_start",
    "distill_job_wait",
    "distill_jobs_sweep",
    "distill_proposal_apply",
    "distill_proposal_reject",
    "distill_proposals_store",
    "distill_revert",
    "distill_run",
    "embeddings_backfill",
    "slots_backfill",
]
