"""What the model reads from the versions family (memory_checkout, memory_distill_undo)."""

from __future__ import annotations

from api.mcp import schemas


def checked_out(out: schemas.CheckoutOut) -> str:
    new = out.memory
    assert new is not None  # a memory checkout (a handoff's is rendered by text.handoff_saved)
    return (
        f"Brought back #{out.checkout_of}: its content is current again as id={new.id} (version {new.version}) at "
        f"{new.coordinate or 'unslotted'}, superseding #{out.supersedes}; the history keeps every version."
    )


def distill_undone(out: schemas.DistillUndoOut) -> str:
    members = ", ".join(f"#{m}" for m in out.restored)
    return f"Undid distillation #{out.rule}: {members} active again; the rule is {out.status} ({out.epitaph})."
