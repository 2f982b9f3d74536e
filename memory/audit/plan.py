"""What a revert plan is: what undoing one op row would do, or why it would not, decided before anything changes so
the preview and the apply say the same thing. Shared by the planners of every kind of change (memories in
revert_plan.py; members, entities, profile and handoff versions, admin edits in their own modules) and by the apply
(revert.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from palace.models import OpLog, Palace

# The op rows a revert writes: one per reverted row (naming it in `detail.reverts`, so it is not undone twice), and
# one per bulk run.
REVERT_OP = "memory.revert"
BULK_OP = "memory.bulk_revert"

# Actions on memories (revert_plan.py); the other kinds name theirs in their modules.
RESTORE = "restore"
FORGET = "forget"
ARCHIVE = "archive"
CHECKOUT = "checkout"
DISTILL_UNDO = "distill_undo"
CONFIDENCE = "confidence"
FOLDED = "folded"  # nothing to do on its own: an earlier plan of the same list undoes it


@dataclass
class RevertPlan:
    op_id: int
    op: str
    target_id: int | None
    action: str = ""  # what the revert does; "" when refused
    memory_id: int | None = None  # the memory the action changes (memory plans only)
    checkout_of: int | None = None  # CHECKOUT: the version brought back
    confidence: float | None = None  # CONFIDENCE: the value set back
    folded_into: int | None = None  # FOLDED: the op row whose revert covers this one
    describe: str = ""
    refused: str = ""
    target: str = ""  # what the row changed, for the page ("memory #4", "bob in github.com/team/app")
    palace: str = ""  # the op row's palace, named for staff ("personal palace of carol", "github.com/team/app")
    needs: str = ""  # the permission this kind of revert needs besides `memory.restore_memory` ("" for memories)
    missing_permission: bool = False  # the staff member asking lacks `needs` (refused says so)
    data: dict[str, Any] = field(default_factory=dict)  # what the apply needs (the kinds' modules fill it)
    revert_op_id: int | None = None  # once applied: the `memory.revert` row it wrote

    @property
    def doable(self) -> bool:
        return bool(self.action) and self.action != FOLDED and not self.missing_permission

    def act(self, action: str, describe: str) -> None:
        self.action, self.describe = action, describe

    def refuse(self, reason: str) -> None:
        self.action, self.refused = "", reason


@dataclass(frozen=True)
class Applied:
    """What an apply of another kind than a memory changed, for the revert's own op row."""

    target_kind: str
    target_id: int | None
    palace: Palace | None
    detail: dict[str, Any]


def detail_of(row: OpLog) -> dict[str, Any]:
    return row.detail if isinstance(row.detail, dict) else {}


def palace_name(palace: Palace | None) -> str:
    """A palace as staff read it on the console and the bulk preview: whose personal palace, or the project's origin
    (`Palace.label`'s "my palace" is the member's view)."""
    if palace is None:
        return "no palace"
    if palace.kind == Palace.Kind.PERSONAL:
        owner = palace.personal_owner
        return f"personal palace of {owner.get_username() if owner is not None else '?'}"
    return palace.origin_key or palace.name


def palace_check(*, plan: RevertPlan, row: OpLog, memory_palace_id: int, what: str) -> bool:
    """A row changes memories of its own palace only: one naming a memory of another palace (a forged or imported
    row) is refused, whoever selected it. True when the memory is the row's palace's."""
    if memory_palace_id == row.palace_id:
        return True
    other = palace_name(Palace.objects.select_related("personal_owner").filter(pk=memory_palace_id).first())
    plan.refuse(
        f"{what} is in another palace ({other}) than the op row ({palace_name(row.palace)}): a row never changes "
        "another palace's rows"
    )
    return False
