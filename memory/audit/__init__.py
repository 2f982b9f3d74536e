"""Auditing and repairing with a staff account: a memory's whole history (history.py), what reverting an op row
would do (plan.py, revert_plan.py; the other kinds of change in members.py, entities.py, versions.py,
admin_edits.py), and the reverts themselves, one row or everything one actor did in a time range (revert.py)."""

from __future__ import annotations

from memory.audit.history import History, memory_history
from memory.audit.plan import RevertPlan
from memory.audit.revert import (
    BulkPreview,
    BulkResult,
    Selection,
    bulk_revert_apply,
    bulk_revert_preview,
    distill_revert_as_staff,
    memory_checkout_as_staff,
    memory_restore_as_staff,
    op_revert,
    op_revert_preview,
    staff_actor,
)
from memory.audit.revert_plan import plan_list, plan_page, plan_revert, reverted_by, reverted_map

__all__ = [
    "BulkPreview",
    "BulkResult",
    "History",
    "RevertPlan",
    "Selection",
    "bulk_revert_apply",
    "bulk_revert_preview",
    "distill_revert_as_staff",
    "memory_checkout_as_staff",
    "memory_history",
    "memory_restore_as_staff",
    "op_revert",
    "op_revert_preview",
    "plan_list",
    "plan_page",
    "plan_revert",
    "reverted_by",
    "reverted_map",
    "staff_actor",
]
