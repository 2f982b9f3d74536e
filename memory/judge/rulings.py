"""The judge: rules on the fuzzy band of the write pipeline, with a chat model when one is configured and the rules
otherwise (memory.judge.dispositions), never blocking a write.

1. The rules dispose first (MERGE / DEFER / ACCEPT). With no model only their DEFER is recorded, as the rules'
   ruling, and nothing changes: the dispositions are exactly the rules'.
2. With the model enabled and configured, it is asked about the rules' DEFER suspects, about the rules' MERGE
   target (to vet it), and — when the rules accepted — about up to two neighbours from ATRIUM_JUDGE_SIMILARITY up
   (not for episodes). One attempt each, the configured timeout shared by the whole save. The model answers the
   probability the new text states the same thing as the neighbour (`same`) and that it contradicts it
   (`contradicts`), with a one-line reason. Per neighbour: same >= merge_at → MERGE (only into a neighbour of the
   same kind and speaker); contradicts >= contradiction_at → DEFER with a `contradicts` edge; same <= accept_at →
   ACCEPT; otherwise DEFER (unsure: no edge, the model did not confirm a contradiction).
3. When the model is off, has no key, times out or fails, the rules' decision about that neighbour (and, after a
   failure, about the rest) stands, and the ruling says why (`fallback_reason`). A bulk save (`judge_dispose(bulk=
   True)`) does not ask the model at all: the rules' rulings are recorded with the fallback `bulk`.
4. Every ruling is persisted (`Adjudication`, at least the last ATRIUM_JUDGE_KEEP per palace, and every ruling an
   open contradiction points to, however old), and the save hint answers "why was this deferred?" from it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef

from memory.judge import dispositions
from memory.judge.config import BULK, FAILED, SKIPPED, TIMEOUT, JudgeConfig, judge_config
from memory.judge.dispositions import Disposition, Neighbour
from memory.judge.prompt import JudgeReply, judge_pair
from memory.models import Adjudication, Edge, Memory
from memory.providers import LLMError, LLMTimeoutError
from memory.text import truncate_to_chars
from palace import events
from palace.models import Palace

log = logging.getLogger(__name__)

MIN_CALL_MS = 200  # below this much budget left, the model is not asked again in the same save
MAX_WIDENED = 2  # neighbours below the rules' band put to the model per save
EPISODE = "episode"  # what happened: only the rules' DEFER is judged (see judge_dispose)


@dataclass(frozen=True)
class Ruling:
    """The judge's ruling on one (new text, neighbour) pair."""

    neighbour: Neighbour
    verdict: str  # merge | accept | defer
    contradiction: bool  # create a `contradicts` edge
    reason: str
    model_took_part: bool = False
    model_name: str = ""
    p_same: float | None = None
    p_contradiction: float | None = None
    elapsed_ms: int = 0
    fallback_reason: str = ""


@dataclass(frozen=True)
class Judged:
    disposition: Disposition
    rulings: tuple[Ruling, ...] = ()


def rules_reason(content: str, neighbour: Neighbour) -> str:
    """Why the rules suspect a contradiction: which key tokens or negations differ."""
    new_keys, old_keys = dispositions.key_tokens(content), dispositions.key_tokens(neighbour.content)
    parts = []
    if new_keys != old_keys:
        added, dropped = sorted(new_keys - old_keys)[:3], sorted(old_keys - new_keys)[:3]
        parts.append("key tokens differ (" + ", ".join([*(f"+{t}" for t in added), *(f"-{t}" for t in dropped)]) + ")")
    changed: dict[tuple[str, str], str] = {}  # (old, new) → the first thing it counts ("data", then "runs")
    for thing, old, new in dispositions.quantity_changes(content, neighbour.content):
        changed.setdefault((old, new), thing)
    if changed:
        listed = [f"{old} → {new} {thing}" for (old, new), thing in list(changed.items())[:2]]
        parts.append("a number changed (" + ", ".join(listed) + ")")
    if dispositions.negations(content) != dispositions.negations(neighbour.content):
        parts.append("a negation on one side only")
    if not parts:
        parts.append("the wording differs")
    return f"rules: similarity {neighbour.similarity:.3f}, not a restatement: " + "; ".join(parts)


def _rules_ruling(
    content: str, neighbour: Neighbour, verdict: str, fallback: str, detail: str = "", elapsed_ms: int = 0
) -> Ruling:
    """What the rules decided about this neighbour (`verdict`), labelled with why the model did not rule."""
    if verdict == dispositions.MERGE:
        reason = f"rules: similarity {neighbour.similarity:.3f}, a restatement (same key tokens and negations)"
    elif verdict == dispositions.ACCEPT:
        reason = f"rules: similarity {neighbour.similarity:.3f}, below the contradiction band"
    else:
        reason = rules_reason(content, neighbour)
    return Ruling(
        neighbour=neighbour,
        verdict=verdict,
        contradiction=verdict == dispositions.DEFER,
        reason=truncate_to_chars(reason + (f" [model {detail}]" if detail else ""), 300),
        fallback_reason=fallback,
        elapsed_ms=elapsed_ms,
    )


def _model_ruling(*, content: str, kind: str, speaker: str, neighbour: Neighbour, config: JudgeConfig,
                  reply: JudgeReply, elapsed_ms: int) -> Ruling:  # fmt: skip
    t = config.thresholds
    assert config.llm is not None
    same_subject = neighbour.kind == kind and neighbour.speaker.casefold() == speaker.casefold()
    verdict, contradiction = dispositions.DEFER, False
    if reply.same >= t.merge_at:
        verdict = dispositions.MERGE if same_subject else dispositions.ACCEPT
    elif reply.contradicts >= t.contradiction_at:
        contradiction = True
    elif reply.same <= t.accept_at:
        verdict = dispositions.ACCEPT
    reason = " ".join(reply.reason.split())
    return Ruling(
        neighbour=neighbour,
        verdict=verdict,
        contradiction=contradiction,
        reason=truncate_to_chars(reason or "(no reason given)", 300),
        model_took_part=True,
        model_name=config.llm.model,
        p_same=round(reply.same, 4),
        p_contradiction=round(reply.contradicts, 4),
        elapsed_ms=elapsed_ms,
    )


def rule_pairs(*, content: str, kind: str, speaker: str, suspects: tuple[Neighbour, ...],
               config: JudgeConfig, rules_verdict: str = dispositions.DEFER) -> list[Ruling]:  # fmt: skip
    """One ruling per suspect (see the module docstring, steps 2-3); `rules_verdict` is what the rules decided
    about these suspects, and stands for each one the model does not rule on."""
    rulings: list[Ruling] = []
    failed = False
    budget_end = time.monotonic() + config.timeout_ms / 1000
    for neighbour in suspects:
        left_ms = (budget_end - time.monotonic()) * 1000
        if config.llm is None:
            rulings.append(_rules_ruling(content, neighbour, rules_verdict, config.off_reason or SKIPPED))
            continue
        if failed:
            rulings.append(
                _rules_ruling(content, neighbour, rules_verdict, SKIPPED, "not asked after a failure in this save")
            )
            continue
        if left_ms < MIN_CALL_MS:
            rulings.append(
                _rules_ruling(content, neighbour, rules_verdict, SKIPPED, "not asked: the save's time budget is spent")
            )
            continue
        llm = replace(config.llm, timeout_s=left_ms / 1000)  # what is left of the save's budget
        started = time.monotonic()
        try:
            reply = judge_pair(config=llm, new=content, old=neighbour.content, kind=kind)
        except LLMError as exc:
            elapsed = round((time.monotonic() - started) * 1000)
            failed = True
            fallback = TIMEOUT if isinstance(exc, LLMTimeoutError) else FAILED
            log.warning("judge fell back to the rules: %s", exc)
            rulings.append(
                _rules_ruling(content, neighbour, rules_verdict, fallback, f"{fallback}: {str(exc)[:160]}", elapsed)
            )
            continue
        elapsed = round((time.monotonic() - started) * 1000)
        rulings.append(
            _model_ruling(
                content=content, kind=kind, speaker=speaker, neighbour=neighbour, config=config, reply=reply,
                elapsed_ms=elapsed,
            )
        )  # fmt: skip
    return rulings


def combine(rulings: list[Ruling]) -> Disposition:
    """The save's disposition from its rulings: a merge wins (into the most similar), then contradictions (DEFER
    with edges), then an unsure ruling (DEFER without an edge), else ACCEPT."""
    merges = [r for r in rulings if r.verdict == dispositions.MERGE]
    if merges:
        return Disposition(dispositions.MERGE, merge_into=max(merges, key=lambda r: r.neighbour.similarity).neighbour)
    contradicts = tuple(r.neighbour for r in rulings if r.contradiction)
    if contradicts or any(r.verdict == dispositions.DEFER for r in rulings):
        return Disposition(dispositions.DEFER, contradicts=contradicts)
    return Disposition(dispositions.ACCEPT)


def judge_dispose(
    *,
    content: str,
    kind: str,
    speaker: str,
    neighbours: list[Neighbour],
    config: JudgeConfig | None = None,
    bulk: bool = False,
) -> Judged:
    """The write pipeline's disposition: the rules, then the judge (the module docstring).

    `bulk` (a batch, an import merge, a capture): the model is not asked; the rules dispose, and each ruling behind a
    DEFER is recorded as theirs with the fallback `bulk`, so every edge a bulk save opens is explained.

    With no model, only the rules' DEFER is recorded (as the rules' ruling). With the model on, it is also asked to
    vet the rules' MERGE (word order or a changed word can hide a reversal: "tabs over spaces" / "spaces over
    tabs") and about the nearest neighbours the rules accepted from ATRIUM_JUDGE_SIMILARITY up (e5 places many
    contradictions between 0.88 and the rules' 0.95) — except for episodes: two turns of a conversation are
    distinct events, not claims, so a transcript costs no more model calls than the rules' DEFERs. Where the model
    cannot rule, the rules' decision stands.
    """
    decision = dispositions.dispose(
        content=content,
        kind=kind,
        speaker=speaker,
        neighbours=neighbours,
        merge_similarity=settings.ATRIUM_MERGE_SIMILARITY,
        contradiction_similarity=settings.ATRIUM_CONTRADICTION_SIMILARITY,
        # a changed count is a suspect from the judge's floor (dispositions.quantities); two turns of a
        # conversation with different numbers are two events
        quantity_similarity=None if kind == EPISODE else settings.ATRIUM_JUDGE_SIMILARITY,
    )
    if bulk:
        config = JudgeConfig(llm=None, off_reason=BULK, timeout_ms=0)
    if decision.disposition == dispositions.DEFER:
        config = config or judge_config()
        suspects = decision.contradicts
    elif kind == EPISODE:
        return Judged(decision)  # a turn of conversation is not a claim to vet or to widen the band for
    elif decision.disposition == dispositions.MERGE and decision.merge_into is not None:
        config = config or judge_config()
        if config.llm is None:
            return Judged(decision)
        suspects = (decision.merge_into,)
    else:
        floor = settings.ATRIUM_JUDGE_SIMILARITY
        band = [n for n in sorted(neighbours, key=lambda n: -n.similarity) if n.similarity >= floor][:MAX_WIDENED]
        if not band:
            return Judged(decision)
        config = config or judge_config()
        if config.llm is None:
            return Judged(decision)
        suspects = tuple(band)
    rulings = rule_pairs(
        content=content, kind=kind, speaker=speaker, suspects=suspects, config=config,
        rules_verdict=decision.disposition,
    )  # fmt: skip
    return Judged(combine(rulings), tuple(rulings))


# --- the record and the hint -----------------------------------------------------------------------------------


def adjudications_record(
    *, palace: Palace, judged: Judged, new_memory: Memory | None, new_text: str, edges: dict[int, Edge]
) -> list[Adjudication]:
    """Persist one save's rulings (inside its transaction), then prune the palace's oldest beyond the bound. A bulk
    chunk writes its rulings with its other rows instead (`adjudication_rows`, `adjudications_write`) and prunes
    once (`adjudications_prune`)."""
    rows = adjudication_rows(palace=palace, judged=judged, new_memory=new_memory, new_text=new_text, edges=edges)
    rows = adjudications_write(palace=palace, rows=rows)
    if rows:
        adjudications_prune(palace=palace)
    return rows


def adjudication_rows(
    *, palace: Palace, judged: Judged, new_memory: Memory | None, new_text: str, edges: dict[int, Edge]
) -> list[Adjudication]:
    """The rulings as unsaved rows (a bulk chunk writes its rows at its end, `adjudications_write`)."""
    return [
        Adjudication(
            palace=palace,
            verdict=r.verdict,
            contradiction=r.neighbour.id in edges,
            p_same=r.p_same,
            p_contradiction=r.p_contradiction,
            similarity=round(r.neighbour.similarity, 4),
            model_took_part=r.model_took_part,
            model_name=r.model_name,
            elapsed_ms=r.elapsed_ms,
            fallback_reason=r.fallback_reason,
            reason=r.reason,
            new_memory=new_memory,
            neighbour_id=r.neighbour.id,
            new_text=truncate_to_chars(new_text, 300),
            edge=edges.get(r.neighbour.id),
        )
        for r in judged.rulings
    ]


def adjudications_write(*, palace: Palace, rows: list[Adjudication]) -> list[Adjudication]:
    """Insert ruling rows of `palace` (one statement) and tell its Judge pages once the transaction commits."""
    rows = Adjudication.objects.bulk_create(rows)
    if rows:
        palace_id = palace.pk
        payload = {"palace_id": palace_id}
        transaction.on_commit(lambda: events.publish(kind="judge", payload=payload, palace_id=palace_id))
    return rows


def adjudications_prune(*, palace: Palace) -> None:
    """Delete the palace's rulings beyond the newest ATRIUM_JUDGE_KEEP (inside the caller's transaction)."""
    keep = settings.ATRIUM_JUDGE_KEEP
    cut = Adjudication.objects.filter(palace=palace).order_by("-id").values_list("id", flat=True)[keep : keep + 1]
    cut_id = next(iter(cut), None)
    if cut_id is not None:
        # A ruling an open contradiction points to is its only explanation ("why was this deferred?"): it stays
        # until the edge is decided, however old.
        # NOT EXISTS, one edge looked up by its key a row: `.exclude()` over the edge join made Django delete
        # "WHERE id IN (SELECT ... NOT IN (...))", which PostgreSQL ran as a nested loop whenever its statistics
        # had not seen the rows yet (a long backfill transaction): minutes at 1,500 turns.
        open_edge = Edge.objects.filter(pk=OuterRef("edge_id"), kind=Edge.Kind.CONTRADICTS, status=Edge.Status.PENDING)
        Adjudication.objects.filter(palace=palace, id__lte=cut_id).filter(~Exists(open_edge)).delete()


def describe(n: Neighbour) -> str:
    return f"#{n.id} “{truncate_to_chars(n.placard or n.content, 80)}”"


def why(r: Ruling) -> str:
    """One line answering "why was this deferred / merged / accepted?" from a ruling."""
    if r.model_took_part:
        return (
            f"judged by model {r.model_name} (same {r.p_same:.2f}, contradicts {r.p_contradiction:.2f}, "
            f"{r.elapsed_ms} ms): {r.reason}"
        )
    return f"judged by the rules ({r.fallback_reason}): {r.reason}"


def save_hint(judged: Judged, edges: dict[int, Edge]) -> str:
    """The save result's hint for a judged save: each suspect with its edge and the reason, then what to do."""
    d = judged.disposition
    parts = []
    for r in judged.rulings:
        edge = edges.get(r.neighbour.id)
        if d.disposition == dispositions.MERGE and d.merge_into is not None and r.neighbour.id == d.merge_into.id:
            parts.append(f"restates {describe(r.neighbour)}; reinforced it instead of saving a copy — {why(r)}")
        elif edge is not None:
            parts.append(f"may contradict {describe(r.neighbour)} (edge={edge.pk}) — {why(r)}")
        elif r.verdict == dispositions.DEFER:
            parts.append(f"unsure whether it restates {describe(r.neighbour)} (no edge) — {why(r)}")
        else:
            parts.append(f"close to {describe(r.neighbour)}, not in conflict — {why(r)}")
    hint = "; ".join(parts)
    if edges:
        ids = ", ".join(f"edge={e.pk}" for e in edges.values())
        hint += (
            f"; saved with a pending contradiction: decide it with memory_resolve ({ids}, decision keep_newer | "
            "keep_older | both_stand | merge), or correct one side with memory_update"
        )
    return hint
