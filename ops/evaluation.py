"""`atrium eval`: retrieval quality on a LoCoMo-style dataset, through the real write pipeline and the real search.

Protocol (../shared/bench/README.md):

1. Every conversation gets a fresh throwaway user and palace. All of its work runs in one transaction that is
   rolled back at the end, so nothing is left behind: not the user, not the palace, not its op-log rows (the op
   log is append-only, so a committed throwaway palace could never be deleted).
2. Ingest: each turn goes through `memory.pipeline.memory_save` as an episode, in order: content = the turn's text,
   plus "[image: <caption>]" when the turn shared an image (the caption is all that was released of it); speaker;
   occurred_at = the session's `session_time`; source_session "<conversation>:<session>"; source_turn = the turn id;
   source_seq = its position. Ingest reads only `turns`.
3. Query: each question's text, verbatim, through `memory.search.memory_search` scoped to that palace, with
   reinforcement and evidence batches off (a measurement must not change the ranking of the next question).
   Only then are the question's evidence and category read, to score the returned ranking.
4. A returned memory counts for every turn it carries as a source (its own turn, plus any restatement merged into
   it); the ranked turn list is the hits' turns in order, without repeats. Sessions are ranked by their best turn.
5. Metrics per question, micro-averaged: Recall@k, any-hit@k, MRR (over the returned list, `SEARCH_DEPTH` hits),
   session any-hit@10. Headline = categories 1-4; each category reported with its name and n.
"""

from __future__ import annotations

import json
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.db import transaction

from memory.models import Memory
from memory.search import memory_search
from palace.actors import Actor
from palace.models import Palace

__all__ = ["CATEGORY_NAMES", "EvalReport", "evaluate_dataset", "load_dataset", "parse_session_time", "turn_content"]

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
HEADLINE_CATEGORIES = (1, 2, 3, 4)
SEARCH_DEPTH = 50  # hits asked for per question: MRR is MRR@50, session ranking uses them all
SESSION_K = 10


class DatasetError(ValueError):
    """The dataset file is not in the expected format; the message says where."""


def parse_session_time(text: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" as an aware datetime (UTC: the dataset names no zone)."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise DatasetError(f"unparseable session_time {text!r}")


def turn_content(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", "")).strip()
    caption = str(turn.get("image_caption") or "").strip()
    return f"{text} [image: {caption}]" if caption else text


def load_dataset(path: str | Path) -> list[dict[str, Any]]:
    conversations = []
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                conv = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"line {number}: not JSON ({exc})") from exc
            if not isinstance(conv, dict) or not {"conversation_id", "turns", "questions"} <= conv.keys():
                raise DatasetError(f"line {number}: needs conversation_id, turns and questions")
            conversations.append(conv)
    if not conversations:
        raise DatasetError("the dataset holds no conversation")
    return conversations


# --- scoring ---------------------------------------------------------------------------------------------------


@dataclass
class _Tally:
    ks: tuple[int, ...]
    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, metrics: dict[str, float]) -> None:
        for key, value in metrics.items():
            self.values.setdefault(key, []).append(value)

    def summary(self) -> dict[str, float | int]:
        keys = [*(f"recall@{k}" for k in self.ks), *(f"any_hit@{k}" for k in self.ks), "mrr"]
        keys.append(f"session_any_hit@{SESSION_K}")
        n = len(self.values.get("mrr", []))
        out: dict[str, float | int] = {"n": n}
        for key in keys:
            values = self.values.get(key, [])
            out[key] = round(sum(values) / n, 4) if n else 0.0
        return out


def score_question(
    *, ranked_turns: list[str], turn_session: dict[str, str], evidence: Iterable[str], ks: tuple[int, ...]
) -> dict[str, float]:
    wanted = {e for e in evidence if e in turn_session}
    metrics: dict[str, float] = {}
    for k in ks:
        found = wanted & set(ranked_turns[:k])
        metrics[f"recall@{k}"] = len(found) / len(wanted) if wanted else 0.0
    for k in ks:
        metrics[f"any_hit@{k}"] = float(bool(wanted & set(ranked_turns[:k])))
    metrics["mrr"] = next((1.0 / rank for rank, t in enumerate(ranked_turns, start=1) if t in wanted), 0.0)
    sessions: list[str] = []
    for t in ranked_turns:
        if turn_session[t] not in sessions:
            sessions.append(turn_session[t])
    metrics[f"session_any_hit@{SESSION_K}"] = float(bool({turn_session[e] for e in wanted} & set(sessions[:SESSION_K])))
    return metrics


# --- running -------------------------------------------------------------------------------------------------


@dataclass
class EvalReport:
    ks: tuple[int, ...]
    headline: dict[str, float | int]
    by_category: dict[str, dict[str, float | int]]
    overall: dict[str, float | int]
    ingest_seconds: float
    query_seconds: float
    turns: int
    dispositions: dict[str, int]
    modes: dict[str, int]

    def as_dict(self) -> dict[str, Any]:
        return {
            "headline": self.headline,
            "by_category": self.by_category,
            "all_categories": self.overall,
            "ingest_seconds": round(self.ingest_seconds, 2),
            "query_seconds": round(self.query_seconds, 2),
            "turns": self.turns,
            "dispositions": self.dispositions,
            "search_modes": self.modes,
            "protocol": {
                "unit": "one memory per turn, saved through memory_save (kind episode, source eval)",
                "stored_with_turn": "speaker, occurred_at = session_time, source_session, source_turn",
                "image_captions": "included in the content as [image: <caption>]",
                "search": f"memory_search, top {SEARCH_DEPTH}, reinforcement and batches off",
                "mrr_depth": SEARCH_DEPTH,
                "merged_memories": "a memory counts for every turn it absorbed (listed in dispositions.merge)",
            },
        }


class _Rollback(Exception):
    pass


def _turns_of(memory: Memory, conversation_prefix: str) -> list[str]:
    turns = [memory.source_turn] if memory.source_turn else []
    for source in memory.sources or []:
        if isinstance(source, dict) and str(source.get("session", "")).startswith(conversation_prefix):
            turn = str(source.get("turn") or "")
            if turn and turn not in turns:
                turns.append(turn)
    return turns


def _throwaway_user() -> Any:
    from palace.services import user_create

    name = f"eval-{secrets.token_hex(6)}"
    return user_create(username=name, actor=Actor.for_system("eval"))


def _ingest(*, conv: dict[str, Any], palace: Palace, actor: Actor, dispositions: Counter[str]) -> None:
    from memory.pipeline import memory_save

    conv_id = str(conv["conversation_id"])
    for seq, turn in enumerate(conv["turns"], start=1):
        result = memory_save(
            palace=palace,
            actor=actor,
            content=turn_content(turn),
            kind="episode",
            source="eval",
            occurred_at=parse_session_time(str(turn["session_time"])),
            speaker=str(turn.get("speaker", "")),
            source_session=f"{conv_id}:{turn['session']}",
            source_turn=str(turn["id"]),
            source_seq=seq,
            enrol_review=False,
        )
        dispositions[result.disposition] += 1


def _search(*, conv: dict[str, Any], user: Any, palace: Palace, modes: Counter[str]) -> list[list[str]]:
    """The ranked turn ids for each question, reading nothing but the question text."""
    prefix = f"{conv['conversation_id']}:"
    rankings = []
    for question in conv["questions"]:
        result = memory_search(
            user=user,
            query=str(question["question"]),
            palace_ids=[palace.pk],
            limit=SEARCH_DEPTH,
            reinforce=False,
            register_batch=False,
        )
        modes[result.mode + ("" if not result.degraded else f" (degraded: {', '.join(result.degraded)})")] += 1
        ranked: list[str] = []
        for hit in result.hits:
            for turn in _turns_of(hit.memory, prefix):
                if turn not in ranked:
                    ranked.append(turn)
        rankings.append(ranked)
    return rankings


def evaluate_dataset(
    *,
    conversations: list[dict[str, Any]],
    ks: tuple[int, ...] = (5, 10),
    progress: Callable[[str], None] | None = None,
) -> EvalReport:
    ks = tuple(sorted(set(ks)))
    headline, overall = _Tally(ks), _Tally(ks)
    by_category: dict[int, _Tally] = {}
    dispositions: Counter[str] = Counter()
    modes: Counter[str] = Counter()
    ingest_seconds = query_seconds = 0.0
    turns = 0
    for conv in conversations:
        conv_id = str(conv["conversation_id"])
        rankings: list[list[str]] = []
        try:
            with transaction.atomic():
                user = _throwaway_user()
                palace = Palace.objects.get(personal_owner=user)
                started = time.perf_counter()
                _ingest(conv=conv, palace=palace, actor=Actor.for_user(user), dispositions=dispositions)
                ingest_seconds += time.perf_counter() - started
                started = time.perf_counter()
                rankings = _search(conv=conv, user=user, palace=palace, modes=modes)
                query_seconds += time.perf_counter() - started
                raise _Rollback
        except _Rollback:
            pass
        turns += len(conv["turns"])
        # Scoring: only now are evidence and categories read.
        turn_session = {str(t["id"]): str(t["session"]) for t in conv["turns"]}
        for question, ranked in zip(conv["questions"], rankings, strict=True):
            category = int(question.get("category", 0))
            metrics = score_question(
                ranked_turns=ranked, turn_session=turn_session, evidence=question.get("evidence", []), ks=ks
            )
            overall.add(metrics)
            if category in HEADLINE_CATEGORIES:
                headline.add(metrics)
            by_category.setdefault(category, _Tally(ks)).add(metrics)
        if progress is not None:
            progress(f"{conv_id}: {len(conv['turns'])} turns, {len(conv['questions'])} questions")
    return EvalReport(
        ks=ks,
        headline=headline.summary(),
        by_category={
            CATEGORY_NAMES.get(c, f"category-{c}"): tally.summary() for c, tally in sorted(by_category.items())
        },
        overall=overall.summary(),
        ingest_seconds=ingest_seconds,
        query_seconds=query_seconds,
        turns=turns,
        dispositions=dict(dispositions),
        modes=dict(modes),
    )
