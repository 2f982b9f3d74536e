"""The evidence gate: a hit means "relevant", not "enough to answer".

Every search registers a batch (memory.search, a server-minted handle bound to the user; the latest 20 per user are
kept). `evidence_assess` rules on whether the cited evidence of one batch suffices. The verdict is enforced by code,
not by the model's say-so: `sufficient` only when all three hold —

1. the model claims the evidence is adequate,
2. at least one cited ref is a valid ref of that batch,
3. the next strategy is `answer`;

otherwise `insufficient`, with the strategy rewritten to `retrieve`. Refs of other batches (or of none) are rejected
and listed. Every verdict is written to the op log (`evidence.assess`), on the batch's palace when the search
covered exactly one, else on no palace.

A sufficient verdict raises the cited memories' confidence (memory.lifecycle.memory_reinforce_cited): shared
ranking state, so only when the caller may write (`may_write`: a read token never writes, whatever the user's role
in the palace). A read token's verdict is returned and recorded like any other, reinforces nothing and writes no
`memory.reinforce` row; `Verdict.reinforcement` says which of these happened.

`assess` is a read tool, yet its verdict lands in a project's append-only op log and is pushed live to every member,
so what it records is held down: one verdict per batch (a second one is a Conflict: search again), at most
ATRIUM_ASSESS_PER_MINUTE verdicts per user a minute (counted on the op log itself, so every web replica sees the
same count), and the free text it carries (`missing`, rejected refs) is scrubbed like any inbound text (forged
tags, secrets) and cut to a short length in the op row.

Refs: a batch's refs are `r1`, `r2`, … (see memory.search). Doors print them qualified with the batch's tag —
`r2.k3FqZ9` — so a ref copied from an older batch's output is recognised as foreign; a bare `r2` is taken to mean
this batch's `r2`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memory.lifecycle import memory_reinforce_cited
from memory.models import SearchBatch
from memory.search.search import BATCH_KEEP
from memory.text import clean_inbound_text, scrub_inbound_text
from palace.errors import Conflict, InvalidInput, NotFound, Throttled
from palace.models import OpLog, Palace
from palace.oplog import oplog_write

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from palace.actors import Actor

MAX_EVIDENCE_REFS = 8
MAX_MISSING_ITEMS = 8
MAX_MISSING_CHARS = 500
MAX_REF_CHARS = 64
LOGGED_TEXT_CHARS = 160  # each free-text item as the op row keeps it (the caller's verdict has it whole)
NEXT_STRATEGIES = ("answer", "retrieve", "ask_user")
TAG_LENGTH = 6


# What a verdict did to the cited memories' confidence (Verdict.reinforcement, shown to the caller and kept on the
# op row).
REINFORCED = "reinforced: each cited active memory +0.05 confidence"
REINFORCE_INSUFFICIENT = "none: only a sufficient verdict reinforces"
REINFORCE_READ_TOKEN = "none: a read token changes no memory (the verdict is recorded, nothing reinforced)"
REINFORCE_NONE_WRITABLE = "none: no cited active memory in a palace you may write"


def _reinforcement(*, sufficient: bool, may_write: bool) -> str:
    if not sufficient:
        return REINFORCE_INSUFFICIENT
    return REINFORCED if may_write else REINFORCE_READ_TOKEN


_ALREADY_ASSESSED = (
    "evidence batch {handle} already has a verdict; one verdict per search. Run memory_search again (another "
    "query, room or project) and assess the new batch."
)


def batch_tag(handle: str) -> str:
    """The short tag that qualifies a batch's refs in tool output."""
    return handle.removeprefix("b_")[:TAG_LENGTH]


def qualify_ref(handle: str, ref: str) -> str:
    return f"{ref}.{batch_tag(handle)}"


@dataclass(frozen=True)
class RejectedRef:
    ref: str
    reason: str


@dataclass
class Verdict:
    batch: str
    sufficient: bool
    next_strategy: str
    claimed_adequate: bool
    claimed_strategy: str
    valid_refs: list[str] = field(default_factory=list)
    memory_ids: list[int] = field(default_factory=list)
    rejected: list[RejectedRef] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    reinforced: list[int] = field(default_factory=list)
    reinforcement: str = ""

    @property
    def verdict(self) -> str:
        return "sufficient" if self.sufficient else "insufficient"


def latest_batches(*, user: AbstractBaseUser) -> list[SearchBatch]:
    """The user's live evidence batches, newest first (the ones `assess` may cite)."""
    return list(SearchBatch.objects.filter(user_id=user.pk).order_by("-created_at", "-pk")[:BATCH_KEEP])


def _clean_missing(missing: list[str] | str | None) -> tuple[list[str], set[str]]:
    """The `missing` items, limits checked before any processing, then scrubbed (tags, secrets) to one line each;
    with the kinds of what was redacted."""
    items = [missing] if isinstance(missing, str) else list(missing or [])
    if len(items) > MAX_MISSING_ITEMS or any(len(str(m)) > MAX_MISSING_CHARS for m in items):
        raise InvalidInput(f"missing: at most {MAX_MISSING_ITEMS} items of at most {MAX_MISSING_CHARS} characters")
    cleaned: list[str] = []
    redacted: set[str] = set()
    for item in items:
        scrubbed = scrub_inbound_text(str(item).replace("\x00", ""), one_line=True)
        redacted.update(scrubbed.types)
        if scrubbed.text:
            cleaned.append(scrubbed.text)
    return cleaned, redacted


def _logged(text: str) -> str:
    return text if len(text) <= LOGGED_TEXT_CHARS else text[: LOGGED_TEXT_CHARS - 1] + "…"


def _throttle(*, user: AbstractBaseUser) -> None:
    """At most ATRIUM_ASSESS_PER_MINUTE verdicts per user in the last minute, counted on the op log (the record
    every replica shares)."""
    limit = settings.ATRIUM_ASSESS_PER_MINUTE
    since = timezone.now() - timedelta(minutes=1)
    recent = OpLog.objects.filter(op="evidence.assess", actor_user_id=user.pk, created_at__gte=since)
    if recent.count() >= limit:
        raise Throttled(
            f"too many evidence verdicts: at most {limit} a minute. Wait a minute before the next memory_assess; "
            "one verdict per search is enough."
        )


def _judge_refs(
    *, batch: SearchBatch, others: dict[str, SearchBatch], refs: list[str]
) -> tuple[list[str], list[int], list[RejectedRef]]:
    valid: list[str] = []
    memory_ids: list[int] = []
    rejected: list[RejectedRef] = []
    own_tag = batch_tag(batch.handle)
    for raw in refs:
        ref = clean_inbound_text(str(raw), one_line=True)
        bare, _, tag = ref.partition(".")
        if tag and tag != own_tag:
            other = others.get(tag)
            reason = f"from another batch ({other.handle})" if other is not None else "from an unknown or expired batch"
            rejected.append(RejectedRef(scrub_inbound_text(ref).text, reason))
        elif bare not in batch.refs:
            rejected.append(RejectedRef(scrub_inbound_text(ref).text, f"not a ref of batch {batch.handle}"))
        elif ref not in valid:
            valid.append(ref)
            memory_ids.append(int(batch.refs[bare]))
    return valid, memory_ids, rejected


def evidence_assess(
    *,
    user: AbstractBaseUser,
    actor: Actor,
    batch: str,
    evidence_refs: list[str],
    adequate: bool,
    next_strategy: str,
    missing: list[str] | str | None = None,
    may_write: bool = True,
) -> Verdict:
    """Rule on one search batch's evidence (see the module docstring) and record the verdict. `may_write` is the
    caller's right to write (False for a read token): without it nothing is reinforced."""
    if next_strategy not in NEXT_STRATEGIES:
        raise InvalidInput(f"nextStrategy must be one of {', '.join(NEXT_STRATEGIES)}")
    if len(evidence_refs) > MAX_EVIDENCE_REFS:
        raise InvalidInput(f"cite at most {MAX_EVIDENCE_REFS} evidence refs; keep the ones that answer the question")
    if any(len(str(ref)) > MAX_REF_CHARS for ref in evidence_refs):
        raise InvalidInput(f"an evidence ref is at most {MAX_REF_CHARS} characters, like r2.k3FqZ9")
    missing_items, redacted = _clean_missing(missing)
    _throttle(user=user)
    live = latest_batches(user=user)
    current = next((b for b in live if b.handle == batch), None)
    if current is None:
        raise NotFound(
            f"evidence batch not found: {batch!r}. Batches expire after {BATCH_KEEP} newer searches; run "
            "memory_search again and cite the batch id and refs printed at the end of its output."
        )
    if current.assessed:
        raise Conflict(_ALREADY_ASSESSED.format(handle=current.handle))
    others = {batch_tag(b.handle): b for b in live if b.pk != current.pk}
    valid, memory_ids, rejected = _judge_refs(batch=current, others=others, refs=list(evidence_refs))

    reasons = []
    if not adequate:
        reasons.append("you did not claim the evidence is adequate")
    if not valid:
        reasons.append("no valid evidence ref of this batch was cited")
    if next_strategy != "answer":
        reasons.append(f"next strategy is {next_strategy!r}, not 'answer'")
    sufficient = not reasons
    verdict = Verdict(
        batch=current.handle,
        sufficient=sufficient,
        next_strategy="answer" if sufficient else "retrieve",
        claimed_adequate=adequate,
        claimed_strategy=next_strategy,
        valid_refs=valid,
        memory_ids=memory_ids,
        rejected=rejected,
        missing=missing_items,
        reasons=reasons,
    )
    palace_ids = [int(p) for p in current.palace_ids or []]
    palace = Palace.objects.filter(pk=palace_ids[0]).first() if len(palace_ids) == 1 else None
    with transaction.atomic():
        # The claim is conditional, so two verdicts racing on one batch record one.
        if not SearchBatch.objects.filter(pk=current.pk, assessed=False).update(assessed=True):
            raise Conflict(_ALREADY_ASSESSED.format(handle=current.handle))
        verdict.reinforcement = _reinforcement(sufficient=sufficient, may_write=may_write)
        if sufficient and may_write:  # confidence is earned once per search, by the memories that answered
            verdict.reinforced = memory_reinforce_cited(
                memory_ids=memory_ids, user=user, actor=actor, batch=current.handle
            )
            if not verdict.reinforced:
                verdict.reinforcement = REINFORCE_NONE_WRITABLE
        oplog_write(
            op="evidence.assess",
            actor=actor,
            palace=palace,
            target_kind="search_batch",
            target_id=current.pk,
            reason="; ".join(reasons),
            detail={
                "batch": current.handle,
                "verdict": verdict.verdict,
                "claimed_adequate": adequate,
                "claimed_strategy": next_strategy,
                "next_strategy": verdict.next_strategy,
                "valid_refs": valid,
                "memory_ids": memory_ids,
                "rejected": [{"ref": _logged(r.ref), "reason": r.reason} for r in rejected],
                "missing": [_logged(m) for m in missing_items],
                "redacted": sorted(redacted),
                "reinforced": verdict.reinforced,
                "reinforcement": verdict.reinforcement,
            },
        )
    return verdict
