"""Writing memories: the one write pipeline behind every door, corrections, forgetting, restoring and outcome reports.

Every function here writes its op-log row in the same transaction as the change it records.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from memory import dispositions
from memory.embeddings import EmbedderUnavailable, embed_passages, embedder_model_name
from memory.models import HALF_DISTANCE, Edge, Memory, vector_literal
from memory.redaction import redact, strip_protocol_tags
from memory.searchtext import build_embedding_text, build_search_text
from memory.textproc import is_low_entropy, truncate_to_chars
from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from palace.models import Membership, Palace
from palace.oplog import oplog_write
from palace.selectors import WRITE_ROLES
from palace.slots import slot_assign

log = logging.getLogger(__name__)

KINDS = tuple(Memory.Kind.values)
SOURCES = tuple(Memory.Source.values)
# Sources that bring old material in bulk: not enrolled for spaced review by default.
NO_REVIEW_SOURCES = frozenset({"backfill", "import", "eval"})
MAX_PLACARD_CHARS = 200
MAX_BATCH_ITEMS = 10
NEIGHBOURS = 5  # nearest neighbours considered for MERGE / DEFER
CONFIDENCE_MERGE_STEP = 0.05
CONFIDENCE_SUCCESS_STEP = 0.05
CONFIDENCE_FAILURE_STEP = -0.1
OUTCOMES = ("success", "failure")


@dataclass
class SaveResult:
    disposition: str  # accept | merge | defer | drop
    memory: Memory | None  # the new memory, or the one a restatement merged into; None on DROP
    merged_into: int | None = None
    contradicts: list[int] = field(default_factory=list)
    redactions: list[str] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)
    hint: str = ""


@dataclass
class ItemError:
    index: int
    code: str
    message: str


@dataclass
class BatchResult:
    count: int  # items received
    items: list[SaveResult | ItemError]
    failed: int


@dataclass
class _Prepared:
    """A save request after validation, tag stripping and redaction, before embedding."""

    content: str
    placard: str
    kind: str
    speaker: str
    source_session: str
    source_turn: str
    source_seq: int | None
    occurred_at: datetime
    importance: float | None
    enrol_review: bool | None
    redactions: list[str]
    low_entropy: bool


# --- validation and cleaning -------------------------------------------------------------------------------------


def _text(value: object, name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    return value


def _short(value: object, name: str, limit: int) -> str:
    text = " ".join(strip_protocol_tags(_text(value, name)).split())
    if len(text) > limit:
        raise InvalidInput(f"{name} is at most {limit} characters")
    return text


def _prepare(
    *,
    content: object,
    kind: object,
    placard: object,
    speaker: object,
    source_session: object,
    source_turn: object,
    source_seq: object,
    occurred_at: object,
    importance: object,
    enrol_review: object,
    now: datetime,
) -> _Prepared:
    """Validate and clean one save request: strip forged tags (and NUL/control bytes), then redact."""
    if kind not in KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(KINDS)}", field="kind")
    assert isinstance(kind, str)
    if not isinstance(content, str):
        raise InvalidInput("content must be a string", field="content")
    raw = content
    limit = settings.ATRIUM_MAX_CONTENT_CHARS
    # Bound the work the regexes do on absurd input before cleaning; the real limit applies after.
    if len(raw) > 4 * limit:
        raise InvalidInput(f"content is at most {limit} characters", field="content")
    scrubbed = redact(strip_protocol_tags(raw.replace("\x00", "")).strip())
    text = scrubbed.text.strip()
    if not text:
        raise InvalidInput("content is empty", field="content")
    if len(text) > limit:
        raise InvalidInput(f"content is at most {limit} characters (got {len(text)})", field="content")
    placard_scrubbed = redact(_short(placard, "placard", MAX_PLACARD_CHARS))
    if source_seq is not None and (not isinstance(source_seq, int) or isinstance(source_seq, bool)):
        raise InvalidInput("source_seq must be an integer", field="source_seq")
    if importance is not None and (
        not isinstance(importance, int | float) or isinstance(importance, bool) or not 0 <= importance <= 1
    ):
        raise InvalidInput("importance is a number from 0 to 1", field="importance")
    if occurred_at is not None and not isinstance(occurred_at, datetime):
        raise InvalidInput("occurred_at must be a datetime", field="occurred_at")
    when = occurred_at or now
    if timezone.is_naive(when):
        when = timezone.make_aware(when, timezone.get_default_timezone())
    return _Prepared(
        content=text,
        placard=placard_scrubbed.text[:MAX_PLACARD_CHARS],  # a redaction marker may be longer than the secret
        kind=kind,
        speaker=_short(speaker, "speaker", 120),
        source_session=_short(source_session, "source_session", 200),
        source_turn=_short(source_turn, "source_turn", 100),
        source_seq=source_seq,
        occurred_at=when,
        importance=None if importance is None else float(importance),
        enrol_review=None if enrol_review is None else bool(enrol_review),
        redactions=sorted(set(scrubbed.types) | set(placard_scrubbed.types)),
        low_entropy=is_low_entropy(text),
    )


def _provenance(*, p: _Prepared, source: str, actor: Actor, now: datetime) -> dict[str, Any]:
    """One entry of Memory.sources: where a piece of content came from, stamped from the Actor, never the client."""
    return {
        "kind": source,
        "session": p.source_session,
        "turn": p.source_turn,
        "seq": p.source_seq,
        "speaker": p.speaker,
        "user_id": actor.user_id,
        "token_id": actor.token_id,
        "system": actor.system,
        "at": now.isoformat(),
    }


def _embed(texts: list[str]) -> tuple[list[list[float] | None], list[str]]:
    """Vectors for `texts`, or Nones and the degraded marker when the embedder cannot run."""
    try:
        vectors = embed_passages(texts)
    except EmbedderUnavailable as exc:
        log.warning("saving without embeddings: %s", exc)
        return [None] * len(texts), ["embedder"]
    return [v.tolist() for v in vectors], []


def _previous_in_session(*, palace: Palace, source_session: str) -> Memory | None:
    """The latest memory of the same palace and source session (the turn before this one), if any."""
    if not source_session:
        return None
    return (
        Memory.objects.filter(palace=palace, source_session=source_session)
        .only("id", "content", "kind")
        .order_by("-id")
        .first()
    )


def _derived_texts(p: _Prepared, context: str) -> tuple[str, str]:
    args: dict[str, Any] = {
        "content": p.content,
        "placard": p.placard,
        "speaker": p.speaker,
        "occurred_at": p.occurred_at,
        "context": context,
    }
    return build_search_text(**args), build_embedding_text(**args)


# --- disposition -------------------------------------------------------------------------------------------------


def _neighbours(*, palace: Palace, vector: list[float]) -> list[dispositions.Neighbour]:
    """The nearest active memories in the same palace (must run inside the save transaction).

    Ordered by the half-precision distance the HNSW index is built on (memory.models), judged by the exact cosine
    of the stored full-precision vectors: the merge and contradiction thresholds are that precise.
    """
    literal = vector_literal(vector)
    with connection.cursor() as cursor:
        # pgvector >= 0.8: keep scanning the HNSW graph until enough rows pass the palace filter.
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute(
            "SELECT m.id, m.kind, m.content, m.placard, m.speaker, m.embedding <=> %s::vector"  # noqa: S608
            " FROM memory_memory m WHERE m.palace_id = %s AND m.status = %s AND m.embedding IS NOT NULL"
            f" ORDER BY {HALF_DISTANCE} LIMIT %s",
            [literal, palace.pk, Memory.Status.ACTIVE, literal, NEIGHBOURS],
        )
        rows = cursor.fetchall()
    rows.sort(key=lambda r: float(r[5]))  # relaxed_order: the index order is approximate
    return [
        dispositions.Neighbour(
            id=pk, kind=kind, content=content, placard=placard, speaker=speaker, similarity=1.0 - float(distance)
        )
        for pk, kind, content, placard, speaker, distance in rows
    ]


def _describe(n: dispositions.Neighbour) -> str:
    return f"#{n.id} “{truncate_to_chars(n.placard or n.content, 80)}”"


def _merge(
    *,
    target_id: int,
    p: _Prepared,
    source: str,
    actor: Actor,
    similarity: float,
    now: datetime,
) -> Memory:
    """Reinforce an existing memory with a restatement: confidence up, a hit, the new provenance kept."""
    target = Memory.objects.select_for_update().get(pk=target_id)
    target.confidence = min(1.0, round(target.confidence + CONFIDENCE_MERGE_STEP, 6))
    target.hit_count += 1
    target.last_accessed_at = now
    target.sources = [*target.sources, _provenance(p=p, source=source, actor=actor, now=now)]
    if p.redactions:
        target.redactions = sorted(set(target.redactions) | set(p.redactions))
    target.save(update_fields=["confidence", "hit_count", "last_accessed_at", "sources", "redactions", "updated_at"])
    oplog_write(
        op="memory.merge",
        actor=actor,
        palace=target.palace,
        target_kind="memory",
        target_id=target.pk,
        reason="restatement of an existing memory",
        detail={
            "disposition": dispositions.MERGE,
            "similarity": round(similarity, 4),
            "source": source,
            "session": p.source_session,
            "turn": p.source_turn,
            "redactions": p.redactions,
            "confidence": target.confidence,
        },
    )
    return target


def _create(
    *,
    palace: Palace,
    p: _Prepared,
    source: str,
    actor: Actor,
    vector: list[float] | None,
    search_text: str,
    now: datetime,
    supersedes: Memory | None = None,
) -> Memory:
    """Insert the memory, slotted (a correction inherits its predecessor's slot)."""
    if p.enrol_review is not None:
        enrolled = p.enrol_review
    else:
        enrolled = bool(settings.ATRIUM_REVIEW_ENROL) and source not in NO_REVIEW_SOURCES
    slot = slot_assign(
        palace=palace, kind=p.kind, actor=actor, inherit=supersedes.slot if supersedes is not None else None
    )
    memory = Memory(
        palace=palace,
        kind=p.kind,
        content=p.content,
        placard=p.placard,
        occurred_at=p.occurred_at,
        created_at=now,
        source_kind=source,
        source_session=p.source_session,
        source_turn=p.source_turn,
        source_seq=p.source_seq,
        sources=[_provenance(p=p, source=source, actor=actor, now=now)],
        speaker=p.speaker,
        created_by_id=actor.user_id,
        created_by_token_id=actor.token_id,
        redactions=p.redactions,
        search_text=search_text,
        embedding=vector,
        embedding_model=embedder_model_name() if vector is not None else "",
        slot=slot,
        review_enrolled=enrolled,
        supersedes=supersedes,
    )
    if p.importance is not None:
        memory.importance = p.importance
    if supersedes is not None:
        memory.confidence = supersedes.confidence
        memory.importance = supersedes.importance if p.importance is None else p.importance
        memory.version = supersedes.version + 1
    memory.save()
    return memory


def _lock_palace(palace: Palace) -> None:
    """Serialise writers of one palace, so two identical saves cannot both be ACCEPTed."""
    Palace.objects.select_for_update(no_key=True).filter(pk=palace.pk).values_list("pk", flat=True).first()


def _save_prepared(
    *,
    palace: Palace,
    actor: Actor,
    p: _Prepared,
    source: str,
    vector: list[float] | None,
    degraded: list[str],
    search_text: str,
    previous: Memory | None,
    now: datetime,
) -> SaveResult:
    """Steps 5-6 of the pipeline, inside one transaction: dispose, write, slot, link, op row."""
    with transaction.atomic():
        _lock_palace(palace)
        decision = dispositions.Disposition(dispositions.ACCEPT)
        if vector is not None:
            decision = dispositions.dispose(
                content=p.content,
                kind=p.kind,
                speaker=p.speaker,
                neighbours=_neighbours(palace=palace, vector=vector),
                merge_similarity=settings.ATRIUM_MERGE_SIMILARITY,
                contradiction_similarity=settings.ATRIUM_CONTRADICTION_SIMILARITY,
            )
        if decision.merge_into is not None:
            target = _merge(
                target_id=decision.merge_into.id,
                p=p,
                source=source,
                actor=actor,
                similarity=decision.merge_into.similarity,
                now=now,
            )
            return SaveResult(
                disposition=dispositions.MERGE,
                memory=target,
                merged_into=target.pk,
                redactions=p.redactions,
                degraded=degraded,
                hint=f"restates {_describe(decision.merge_into)}; reinforced it instead of saving a copy",
            )
        memory = _create(
            palace=palace, p=p, source=source, actor=actor, vector=vector, search_text=search_text, now=now
        )
        for suspect in decision.contradicts:
            Edge.objects.create(
                palace=palace,
                from_memory=memory,
                to_memory_id=suspect.id,
                kind=Edge.Kind.CONTRADICTS,
                status=Edge.Status.PENDING,
                weight=round(suspect.similarity, 4),
            )
        if previous is not None and p.kind == Memory.Kind.EPISODE:
            Edge.objects.get_or_create(
                palace=palace, from_memory=previous, to_memory=memory, kind=Edge.Kind.NEXT, defaults={"weight": 1.0}
            )
        hint = ""
        if decision.contradicts:
            hint = "may contradict " + ", ".join(_describe(n) for n in decision.contradicts)
            hint += "; saved with a pending contradiction: correct the older memory or dismiss the edge"
        if degraded:
            hint = (hint + "; " if hint else "") + "saved without an embedding (embedder unavailable)"
        contradicts = [n.id for n in decision.contradicts]
        oplog_write(
            op="memory.save",
            actor=actor,
            palace=palace,
            target_kind="memory",
            target_id=memory.pk,
            detail={
                "disposition": decision.disposition,
                "kind": p.kind,
                "source": source,
                "slot": memory.slot.coordinate if memory.slot is not None else None,
                "redactions": p.redactions,
                "contradicts": contradicts,
                "degraded": degraded,
            },
        )
    return SaveResult(
        disposition=decision.disposition,
        memory=memory,
        contradicts=contradicts,
        redactions=p.redactions,
        degraded=degraded,
        hint=hint,
    )


def _check_source(source: object) -> str:
    if source not in SOURCES:
        raise InvalidInput(f"source must be one of {', '.join(SOURCES)}", field="source")
    assert isinstance(source, str)
    return source


def _drop(p: _Prepared) -> SaveResult:
    # A DROP changes nothing, so it writes no op row: the ledger records mutations, and a chatty client must not
    # be able to fill it with "ok"s. The caller learns the disposition from the result.
    return SaveResult(
        disposition=dispositions.DROP,
        memory=None,
        redactions=p.redactions,
        hint="dropped: no information to remember (an acknowledgement, too short, or repetitive)",
    )


def memory_save(
    *,
    palace: Palace,
    actor: Actor,
    content: str,
    kind: str,
    placard: str = "",
    source: str = "rest",
    occurred_at: datetime | None = None,
    speaker: str = "",
    source_session: str = "",
    source_turn: str = "",
    source_seq: int | None = None,
    importance: float | None = None,
    enrol_review: bool | None = None,
    now: datetime | None = None,
) -> SaveResult:
    """Save one memory through the write pipeline (DESIGN.md, "The write pipeline").

    1. strip forged protocol tags and NUL/control characters; validate kind, length, placard;
    2. redact secrets and personal data (the result and the op row carry the types, never the values);
    3. DROP low-entropy content (no row, no op row);
    4. embed the passage text (on failure: no vector, degraded ["embedder"], ACCEPT);
    5. dispose against the nearest active memories of the same palace: MERGE / DEFER / ACCEPT;
    6. slot, enrol for review, link the previous turn of the same session, write the op row — one transaction.

    The caller has already resolved `palace` for writing through palace.selectors.palace_get(write=True).
    """
    now = now or timezone.now()
    source = _check_source(source)
    p = _prepare(
        content=content,
        kind=kind,
        placard=placard,
        speaker=speaker,
        source_session=source_session,
        source_turn=source_turn,
        source_seq=source_seq,
        occurred_at=occurred_at,
        importance=importance,
        enrol_review=enrol_review,
        now=now,
    )
    if p.low_entropy:
        return _drop(p)
    previous = _previous_in_session(palace=palace, source_session=p.source_session)
    search_text, embedding_text = _derived_texts(p, previous.content if previous is not None else "")
    vectors, degraded = _embed([embedding_text])
    return _save_prepared(
        palace=palace,
        actor=actor,
        p=p,
        source=source,
        vector=vectors[0],
        degraded=degraded,
        search_text=search_text,
        previous=previous,
        now=now,
    )


_ITEM_FIELDS = frozenset(
    {
        "content",
        "kind",
        "placard",
        "occurred_at",
        "speaker",
        "source_session",
        "source_turn",
        "source_seq",
        "importance",
        "enrol_review",
    }
)


def memory_save_batch(
    *, palace: Palace, actor: Actor, items: list[dict[str, Any]], source: str = "rest", now: datetime | None = None
) -> BatchResult:
    """Save up to 10 items with one embedder call; each item gets its own disposition.

    Items are written in order, each in its own savepoint, so a later item that restates an earlier one MERGEs
    into it (in-batch dedup) and one failing item does not block the rest.
    """
    now = now or timezone.now()
    source = _check_source(source)
    if not isinstance(items, list) or not items:
        raise InvalidInput("items must be a non-empty list", field="items")
    if len(items) > MAX_BATCH_ITEMS:
        raise InvalidInput(f"a batch holds at most {MAX_BATCH_ITEMS} items (got {len(items)})", field="items")
    results: list[SaveResult | ItemError | None] = [None] * len(items)
    prepared: list[tuple[int, _Prepared]] = []
    for index, item in enumerate(items):
        try:
            if not isinstance(item, dict):
                raise InvalidInput("an item must be an object")
            unknown = set(item) - _ITEM_FIELDS
            if unknown:
                raise InvalidInput(f"unknown item fields: {', '.join(sorted(unknown))}")
            p = _prepare(
                content=item.get("content"),
                kind=item.get("kind"),
                placard=item.get("placard", ""),
                speaker=item.get("speaker", ""),
                source_session=item.get("source_session", ""),
                source_turn=item.get("source_turn", ""),
                source_seq=item.get("source_seq"),
                occurred_at=item.get("occurred_at"),
                importance=item.get("importance"),
                enrol_review=item.get("enrol_review"),
                now=now,
            )
        except InvalidInput as exc:
            results[index] = ItemError(index=index, code=exc.code, message=exc.message)
            continue
        if p.low_entropy:
            results[index] = _drop(p)
        else:
            prepared.append((index, p))
    # Context (the previous turn) for the embedding text is only known for the first item of each session before
    # writing; later items of the same session in this batch use the item before them.
    texts: list[tuple[str, str]] = []
    previous_content: dict[str, str] = {}
    for _, p in prepared:
        if p.source_session and p.source_session not in previous_content:
            prev = _previous_in_session(palace=palace, source_session=p.source_session)
            previous_content[p.source_session] = prev.content if prev is not None else ""
        texts.append(_derived_texts(p, previous_content.get(p.source_session, "")))
        if p.source_session:
            previous_content[p.source_session] = p.content
    vectors, degraded = _embed([embedding for _, embedding in texts]) if prepared else ([], [])
    for (index, p), (search_text, _), vector in zip(prepared, texts, vectors, strict=True):
        try:
            with transaction.atomic():
                results[index] = _save_prepared(
                    palace=palace,
                    actor=actor,
                    p=p,
                    source=source,
                    vector=vector,
                    degraded=degraded,
                    search_text=search_text,
                    previous=_previous_in_session(palace=palace, source_session=p.source_session),
                    now=now,
                )
        except Exception as exc:  # one bad item must not sink the batch; it is reported, never swallowed
            log.exception("batch item %s failed", index)
            code = getattr(exc, "code", "error")
            results[index] = ItemError(index=index, code=str(code), message=str(getattr(exc, "message", exc)))
    final = [r for r in results if r is not None]
    return BatchResult(count=len(items), items=final, failed=sum(isinstance(r, ItemError) for r in final))


# --- corrections, forgetting, restoring, outcome reports ---------------------------------------------------------


def _require_write(*, actor: Actor, palace_id: int) -> None:
    """Defence in depth behind the doors: a person must be an owner or editor of the memory's palace.

    Raises NotFound when the person is not a member at all (invisible == nonexistent), PermissionDenied for a
    viewer. System jobs act on behalf of the server and pass.
    """
    if actor.system:
        return
    if actor.user is None:
        raise NotFound("memory not found")
    role = Membership.objects.filter(user_id=actor.user.pk, palace_id=palace_id).values_list("role", flat=True).first()
    if role is None:
        raise NotFound("memory not found")
    if role not in WRITE_ROLES:
        raise PermissionDenied("you have read-only access to this palace")


def _locked(*, memory_id: int, actor: Actor) -> Memory:
    """The memory row, locked for the rest of the transaction, after the write check."""
    memory = (
        Memory.objects.select_for_update(of=("self",)).select_related("palace", "slot").filter(pk=memory_id).first()
    )
    if memory is None:
        raise NotFound("memory not found")
    _require_write(actor=actor, palace_id=memory.palace_id)
    return memory


def _memory_id(memory: Memory | int) -> int:
    return memory if isinstance(memory, int) else int(memory.pk)


def memory_update(
    *,
    memory_id: int,
    actor: Actor,
    content: str,
    placard: str | None = None,
    kind: str | None = None,
    expected_version: int | None = None,
    reason: str = "",
    source: str = "rest",
    now: datetime | None = None,
) -> Memory:
    """Correct a memory: a new memory supersedes the old one, which keeps its history and leaves default search.

    The new memory inherits the slot, confidence and importance, and has version = old version + 1. The old row is
    locked (select_for_update) and must still be active or archived: of two concurrent corrections the second
    finds it superseded and gets Conflict, as does a caller whose `expected_version` is stale.
    """
    now = now or timezone.now()
    source = _check_source(source)
    reason = _short(reason, "reason", 500)
    # Cheap checks first (visibility, write role, state) so a doomed request does not pay for an embedding.
    current = Memory.objects.filter(pk=memory_id).only("id", "palace_id", "kind", "placard", "speaker").first()
    if current is None:
        raise NotFound("memory not found")
    _require_write(actor=actor, palace_id=current.palace_id)
    p = _prepare(
        content=content,
        kind=kind or current.kind,
        placard=current.placard if placard is None else placard,
        speaker=current.speaker,
        source_session="",
        source_turn="",
        source_seq=None,
        occurred_at=now,
        importance=None,
        enrol_review=None,
        now=now,
    )
    if p.low_entropy:
        raise InvalidInput("the correction carries no information (too short or only an acknowledgement)")
    search_text, embedding_text = _derived_texts(p, "")
    vectors, degraded = _embed([embedding_text])
    with transaction.atomic():
        old = _locked(memory_id=memory_id, actor=actor)
        if old.status == Memory.Status.SUPERSEDED:
            successor = Memory.objects.filter(supersedes=old).values_list("pk", flat=True).first()
            raise Conflict(f"memory #{old.pk} was already corrected by #{successor}", superseded_by=successor)
        if old.status == Memory.Status.FORGOTTEN:
            raise Conflict(f"memory #{old.pk} is forgotten; restore it before correcting it")
        if expected_version is not None and expected_version != old.version:
            raise Conflict(
                f"memory #{old.pk} is at version {old.version}, not {expected_version}; reload and retry",
                version=old.version,
            )
        p.occurred_at = old.occurred_at
        new = _create(
            palace=old.palace,
            p=p,
            source=source,
            actor=actor,
            vector=vectors[0],
            search_text=search_text,
            now=now,
            supersedes=old,
        )
        old.status = Memory.Status.SUPERSEDED
        old.save(update_fields=["status", "updated_at"])
        oplog_write(
            op="memory.update",
            actor=actor,
            palace=old.palace,
            target_kind="memory",
            target_id=new.pk,
            reason=reason,
            detail={
                "supersedes": old.pk,
                "from_version": old.version,
                "version": new.version,
                "redactions": p.redactions,
                "degraded": degraded,
                "slot": new.slot.coordinate if new.slot is not None else None,
            },
        )
    return new


def memory_forget(*, memory: Memory | int, actor: Actor, reason: str = "") -> Memory:
    """Soft-forget: status forgotten with an epitaph; the row, its slot and its history stay (restorable)."""
    reason = _short(reason, "reason", 500)
    with transaction.atomic():
        row = _locked(memory_id=_memory_id(memory), actor=actor)
        if row.status in (Memory.Status.FORGOTTEN, Memory.Status.SUPERSEDED):
            raise Conflict(f"memory #{row.pk} is already {row.status}")
        _status_change(
            row=row, status=Memory.Status.FORGOTTEN, epitaph=reason, op="memory.forget", actor=actor, reason=reason
        )
    return row


def memory_restore(*, memory: Memory | int, actor: Actor, reason: str = "") -> Memory:
    """Bring a forgotten or archived memory back to active. A superseded one is restored by correcting its successor."""
    reason = _short(reason, "reason", 500)
    with transaction.atomic():
        row = _locked(memory_id=_memory_id(memory), actor=actor)
        if row.status not in (Memory.Status.FORGOTTEN, Memory.Status.ARCHIVED):
            raise Conflict(f"memory #{row.pk} is {row.status}; only forgotten or archived memories can be restored")
        _status_change(
            row=row, status=Memory.Status.ACTIVE, epitaph="", op="memory.restore", actor=actor, reason=reason
        )
    return row


def _status_change(*, row: Memory, status: str, epitaph: str, op: str, actor: Actor, reason: str) -> None:
    """Move a locked row to `status` (bumping its version) and write the op row, inside the caller's transaction."""
    previous = row.status
    row.status = status
    row.epitaph = epitaph
    row.version += 1
    row.save(update_fields=["status", "epitaph", "version", "updated_at"])
    oplog_write(
        op=op,
        actor=actor,
        palace=row.palace,
        target_kind="memory",
        target_id=row.pk,
        reason=reason,
        detail={"from_status": previous},
    )


def memory_report(*, memory: Memory | int, actor: Actor, outcome: str, note: str = "") -> Memory:
    """Report whether acting on a memory worked: success +0.05, failure −0.1 confidence, clamped to [0, 1]."""
    if outcome not in OUTCOMES:
        raise InvalidInput("outcome must be success or failure", field="outcome")
    note = _short(note, "note", 500)
    step = CONFIDENCE_SUCCESS_STEP if outcome == "success" else CONFIDENCE_FAILURE_STEP
    with transaction.atomic():
        row = _locked(memory_id=_memory_id(memory), actor=actor)
        before = row.confidence
        row.confidence = round(min(1.0, max(0.0, before + step)), 6)
        row.save(update_fields=["confidence", "updated_at"])
        oplog_write(
            op="memory.report",
            actor=actor,
            palace=row.palace,
            target_kind="memory",
            target_id=row.pk,
            reason=note,
            detail={"outcome": outcome, "confidence_before": before, "confidence": row.confidence},
        )
    return row
