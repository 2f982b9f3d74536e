"""The curated profile of a palace, with versions: what a person wrote about themselves in their personal palace, or
what a project's writers wrote about the project in its palace. Readable by the palace's members, editable by its
writers (owner, editor).

An edit names the version it was made against (`expected_version`, 0 before the first); a stale one fails loud
with the current version. The unique (palace, version) pair is the lock: of two edits against one version only
one lands, the other gets the same Conflict. A rollback appends a new version with an old one's content: history
is never rewritten. Content goes through the cleaning every memory gets (forged protocol tags stripped, secrets
redacted) and is limited in length. Every change writes its op row in the same transaction.

Callers resolve the palace with their access check (palace.selectors.palace_get); the write functions check again.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from memory.context.versioned import append_version, version_detail
from memory.lifecycle import memory_writable
from memory.models import ProfileVersion
from memory.text import clean_inbound_text, clean_line, redact
from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound
from palace.models import Palace
from palace.oplog import oplog_write

MAX_PROFILE_CHARS = 4000
CURATED_HISTORY_LIMIT = 50


# --- reading -------------------------------------------------------------------------------------------------------


def curated_current(*, palace_id: int) -> ProfileVersion | None:
    """The current version (the highest), or None before the first edit."""
    return ProfileVersion.objects.filter(palace_id=palace_id).order_by("-version").first()


def curated_version_number(*, palace_id: int) -> int:
    """The current version number, 0 before the first edit (what an edit passes as `expected_version`)."""
    current = curated_current(palace_id=palace_id)
    return current.version if current is not None else 0


def curated_text(*, palace_id: int) -> str:
    current = curated_current(palace_id=palace_id)
    return current.content if current is not None else ""


def curated_history(*, palace_id: int, limit: int = CURATED_HISTORY_LIMIT) -> list[ProfileVersion]:
    """The newest `limit` versions, newest first, with who wrote them."""
    rows = ProfileVersion.objects.filter(palace_id=palace_id).select_related("created_by").order_by("-version")
    return list(rows[: max(1, min(limit, 500))])


def curated_get(*, palace_id: int, version: int) -> ProfileVersion:
    row = ProfileVersion.objects.filter(palace_id=palace_id, version=version).first()
    if row is None:
        raise NotFound(f"profile version {version} not found", field="version")
    return row


@dataclass(frozen=True)
class DiffLine:
    op: str  # "+" added, "-" removed, " " unchanged, "@" a hunk header
    text: str


def curated_diff(*, old: str, new: str, context: int = 2) -> list[DiffLine]:
    """A unified line diff from `old` to `new` (difflib), as typed lines for rendering; empty when they are equal."""
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=context)
    out: list[DiffLine] = []
    for line in lines:
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            out.append(DiffLine("@", line[1:]))  # rendered as op + text: the header reads as difflib wrote it
        else:
            out.append(DiffLine(line[:1] or " ", line[1:]))
    return out


# --- writing -------------------------------------------------------------------------------------------------------


def clean_profile_content(content: str) -> tuple[str, tuple[str, ...]]:
    """Cleaned, redacted profile text and the redaction types; InvalidInput when over the limit."""
    if not isinstance(content, str):
        raise InvalidInput("content must be a string", field="content")
    if len(content) > 4 * MAX_PROFILE_CHARS:  # bound the regex work before cleaning; the real limit follows
        raise InvalidInput(f"content is at most {MAX_PROFILE_CHARS} characters", field="content")
    cleaned = clean_inbound_text(content.replace("\x00", ""))
    if len(cleaned) > MAX_PROFILE_CHARS:  # measured before redaction: a marker may be longer than the secret
        raise InvalidInput(f"content is at most {MAX_PROFILE_CHARS} characters (got {len(cleaned)})", field="content")
    scrubbed = redact(cleaned)
    return scrubbed.text.strip(), scrubbed.types


def _stale(palace_id: int, expected: int) -> Conflict:
    current = curated_version_number(palace_id=palace_id)
    return Conflict(
        f"the profile is at version {current}, not {expected}; reload it, merge your change and retry with "
        f"expected_version={current}",
        version=current,
    )


def _append(
    *,
    palace: Palace,
    actor: Actor,
    content: str,
    expected_version: int | None,
    op: str,
    rolled_back_from: int | None,
    reason: str,
    redactions: tuple[str, ...] = (),
) -> ProfileVersion:
    memory_writable(actor=actor, palace_id=palace.pk)

    def write(number: int) -> ProfileVersion:
        current = curated_current(palace_id=palace.pk)
        if rolled_back_from is None and current is not None and current.content == content:
            raise InvalidInput(f"the content is the same as version {number}; nothing to save", field="content")
        row = ProfileVersion.objects.create(
            palace=palace,
            version=number + 1,
            content=content,
            rolled_back_from=rolled_back_from,
            created_by_id=actor.user_id,
            created_by_token_id=actor.token_id,
        )
        detail = version_detail(
            version=row.version,
            from_version=number,
            chars=len(content),
            rolled_back_from=rolled_back_from,
            redactions=list(redactions),
        )
        oplog_write(
            op=op, actor=actor, palace=palace, target_kind="profile", target_id=row.pk, reason=reason, detail=detail
        )
        return row

    return append_version(
        expected_version=expected_version,
        current_number=lambda: curated_version_number(palace_id=palace.pk),
        stale=lambda expected: _stale(palace.pk, expected),
        write=write,
        first="edit",
    )


def curated_edit(
    *, palace: Palace, actor: Actor, content: str, expected_version: int, reason: str = ""
) -> ProfileVersion:
    """Write a new version of the palace's curated profile. `expected_version` is the version the edit was made
    against (0 before the first); Conflict, naming the current version, when it is stale."""
    if not isinstance(expected_version, int) or isinstance(expected_version, bool):
        raise InvalidInput("expected_version is required (0 before the first edit)", field="expected_version")
    text, redactions = clean_profile_content(content)
    return _append(
        palace=palace,
        actor=actor,
        content=text,
        expected_version=expected_version,
        op="profile.edit",
        rolled_back_from=None,
        reason=clean_line(reason, "reason", 500),
        redactions=redactions,
    )


def curated_checkout(
    *, palace: Palace, actor: Actor, version: int, expected_version: int | None = None, reason: str = ""
) -> ProfileVersion:
    """Make an old version's content current again as a new version (history is kept). With `expected_version`,
    refused like an edit when the profile moved on meanwhile."""
    memory_writable(actor=actor, palace_id=palace.pk)
    old = curated_get(palace_id=palace.pk, version=version)
    current = curated_version_number(palace_id=palace.pk)
    if version == current:
        raise Conflict(f"version {version} is already the current profile; nothing to roll back", version=current)
    return _append(
        palace=palace,
        actor=actor,
        content=old.content,
        expected_version=expected_version,
        op="profile.rollback",
        rolled_back_from=old.version,
        reason=clean_line(reason, "reason", 500),
    )


def curated_block(*, palaces: list[Palace]) -> str:
    """The curated profiles of these palaces (personal first, then a project), as one text for injection: each under
    a line naming whose profile and which version; palaces without one are left out."""
    parts: list[str] = []
    for palace in palaces:
        current = curated_current(palace_id=palace.pk)
        if current is None or not current.content.strip():
            continue
        whose = "yours" if palace.kind == Palace.Kind.PERSONAL else f"project {palace.label}"
        parts.append(f"[{whose}, v{current.version}]\n{current.content.strip()}")
    return "\n".join(parts)
