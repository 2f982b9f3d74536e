"""A person's live handoff in a palace (Prism's "where we were"): what they were doing, next steps, open questions and
files touched, so the next session starts where this one stopped.

One handoff per (user, palace), private to its user even in a shared project palace: every function here takes
the person from the actor (never from an argument) and filters on it. A save names the version it was made
against (`expected_version`, 0 before the first) and appends the next version, so every prior snapshot stays; a
stale version is refused with the current one in the message. A checkout ("revert forward") appends a new version
with an old snapshot's content: the version number moves on and nothing is lost. Writing needs a writer's role in
the palace (row-level security allows inserts only there). Every change writes its op row in the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory.context.versioned import append_version, version_detail
from memory.lifecycle import memory_writable
from memory.models import HandoffVersion
from memory.text import clean_inbound_text, clean_line, redact, scrub_inbound_text
from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound
from palace.models import Palace
from palace.oplog import oplog_write

MAX_DOING_CHARS = 4000
MAX_ITEMS = 30
MAX_ITEM_CHARS = 500
HANDOFF_HISTORY_LIMIT = 50


@dataclass(frozen=True)
class HandoffInput:
    doing: str = ""
    next_steps: Sequence[str] = ()
    open_questions: Sequence[str] = ()
    files: Sequence[str] = ()


def _person(actor: Actor) -> int:
    if actor.user_id is None:
        raise InvalidInput("a handoff belongs to a person; a system job has none")
    return actor.user_id


# --- reading -------------------------------------------------------------------------------------------------------


def handoff_current(*, palace_id: int, actor: Actor) -> HandoffVersion | None:
    """The actor's current handoff in this palace, or None before the first save."""
    rows = HandoffVersion.objects.filter(palace_id=palace_id, user_id=_person(actor))
    return rows.order_by("-version").first()


def handoff_version_number(*, palace_id: int, actor: Actor) -> int:
    current = handoff_current(palace_id=palace_id, actor=actor)
    return current.version if current is not None else 0


def handoff_history(*, palace_id: int, actor: Actor, limit: int = HANDOFF_HISTORY_LIMIT) -> list[HandoffVersion]:
    """The actor's handoff versions in this palace, newest first."""
    rows = HandoffVersion.objects.filter(palace_id=palace_id, user_id=_person(actor)).order_by("-version")
    return list(rows[: max(1, min(limit, 500))])


def handoff_get(*, palace_id: int, actor: Actor, version: int) -> HandoffVersion:
    row = HandoffVersion.objects.filter(palace_id=palace_id, user_id=_person(actor), version=version).first()
    if row is None:
        raise NotFound(f"handoff version {version} not found", field="version")
    return row


def handoff_render(row: HandoffVersion) -> str:
    """The handoff as plain lines (unwrapped: the caller wraps what leaves the server)."""
    lines = [f"Handoff v{row.version} ({row.created_at:%Y-%m-%d %H:%M} UTC):"]
    if row.doing:
        lines.append(f"Doing: {row.doing}")
    for title, items in (("Next steps", row.next_steps), ("Open questions", row.open_questions), ("Files", row.files)):
        if items:
            lines.append(f"{title}:")
            lines.extend(f"- {item}" for item in items)
    return "\n".join(lines)


# --- writing -------------------------------------------------------------------------------------------------------


def _clean_items(items: Sequence[str], name: str) -> tuple[list[str], set[str]]:
    if isinstance(items, str) or not isinstance(items, Sequence):
        raise InvalidInput(f"{name} is a list of strings", field=name)
    if len(items) > MAX_ITEMS:
        raise InvalidInput(f"{name} holds at most {MAX_ITEMS} entries", field=name)
    cleaned: list[str] = []
    types: set[str] = set()
    for item in items:
        if not isinstance(item, str):
            raise InvalidInput(f"{name} is a list of strings", field=name)
        scrubbed = scrub_inbound_text(clean_line(item, name, MAX_ITEM_CHARS), one_line=True)
        if scrubbed.text:
            cleaned.append(scrubbed.text[:MAX_ITEM_CHARS])
            types |= set(scrubbed.types)
    return cleaned, types


def clean_handoff(data: HandoffInput) -> tuple[HandoffInput, list[str]]:
    """Forged tags stripped and secrets redacted in every field, lengths checked; the redaction types."""
    if not isinstance(data.doing, str):
        raise InvalidInput("doing is a string", field="doing")
    if len(data.doing) > 4 * MAX_DOING_CHARS:
        raise InvalidInput(f"doing is at most {MAX_DOING_CHARS} characters", field="doing")
    cleaned = clean_inbound_text(data.doing.replace("\x00", ""))
    if len(cleaned) > MAX_DOING_CHARS:  # measured before redaction: a marker may be longer than the secret
        raise InvalidInput(f"doing is at most {MAX_DOING_CHARS} characters (got {len(cleaned)})", field="doing")
    doing = redact(cleaned)
    next_steps, t1 = _clean_items(data.next_steps, "next_steps")
    questions, t2 = _clean_items(data.open_questions, "open_questions")
    files, t3 = _clean_items(data.files, "files")
    clean = HandoffInput(doing=doing.text, next_steps=next_steps, open_questions=questions, files=files)
    if not (clean.doing or next_steps or questions or files):
        raise InvalidInput("the handoff is empty: say what you were doing or what comes next")
    return clean, sorted(set(doing.types) | t1 | t2 | t3)


def _stale(palace_id: int, actor: Actor, expected: int) -> Conflict:
    current = handoff_version_number(palace_id=palace_id, actor=actor)
    return Conflict(
        f"your handoff is at version {current}, not {expected}; memory_handoff_load it, merge and save again with "
        f"expected_version={current}",
        version=current,
    )


def _append(
    *,
    palace: Palace,
    actor: Actor,
    data: HandoffInput,
    expected_version: int | None,
    restored_from: int | None,
    op: str,
    reason: str = "",
    redactions: Sequence[str] = (),
) -> HandoffVersion:
    user_id = _person(actor)
    memory_writable(actor=actor, palace_id=palace.pk)

    def write(number: int) -> HandoffVersion:
        row = HandoffVersion.objects.create(
            palace=palace,
            user_id=user_id,
            version=number + 1,
            doing=data.doing,
            next_steps=list(data.next_steps),
            open_questions=list(data.open_questions),
            files=list(data.files),
            restored_from=restored_from,
            created_by_token_id=actor.token_id,
        )
        detail = version_detail(
            version=row.version, from_version=number, restored_from=restored_from, redactions=list(redactions)
        )
        oplog_write(
            op=op, actor=actor, palace=palace, target_kind="handoff", target_id=row.pk, reason=reason, detail=detail
        )
        return row

    return append_version(
        expected_version=expected_version,
        current_number=lambda: handoff_version_number(palace_id=palace.pk, actor=actor),
        stale=lambda expected: _stale(palace.pk, actor, expected),
        write=write,
        first="save",
    )


def handoff_save(*, palace: Palace, actor: Actor, data: HandoffInput, expected_version: int) -> HandoffVersion:
    """Save the actor's handoff in this palace as a new version; the prior snapshot stays. Conflict, naming the
    current version, when `expected_version` (0 before the first save) is stale."""
    if not isinstance(expected_version, int) or isinstance(expected_version, bool):
        raise InvalidInput("expected_version is required (0 before the first save)", field="expected_version")
    clean, redactions = clean_handoff(data)
    return _append(
        palace=palace,
        actor=actor,
        data=clean,
        expected_version=expected_version,
        restored_from=None,
        op="handoff.save",
        redactions=redactions,
    )


def handoff_checkout(
    *, palace: Palace, actor: Actor, version: int, expected_version: int | None = None, reason: str = ""
) -> HandoffVersion:
    """Revert forward: a new version with an earlier snapshot's content. The version number moves on; no snapshot
    is removed or changed."""
    old = handoff_get(palace_id=palace.pk, actor=actor, version=version)
    current = handoff_version_number(palace_id=palace.pk, actor=actor)
    if version == current:
        raise Conflict(f"handoff version {version} is already current; nothing to bring back", version=current)
    data = HandoffInput(doing=old.doing, next_steps=old.next_steps, open_questions=old.open_questions, files=old.files)
    return _append(
        palace=palace,
        actor=actor,
        data=data,
        expected_version=expected_version,
        restored_from=old.version,
        op="handoff.checkout",
        reason=clean_line(reason, "reason", 500),
    )
