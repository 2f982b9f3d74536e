"""`atrium eval`: retrieval quality on LoCoMo-style datasets, through the real write pipeline and the real search.

Protocol (../shared/bench/README.md):

1. Every conversation gets a fresh throwaway user and palace. All of its work runs in one transaction that is
   rolled back at the end, so nothing is left behind: not the user, not the palace, not its op-log rows (the op
   log is append-only, so a committed throwaway palace could never be deleted).
2. Ingest, through `memory_save`, in order. Transcripts (``turns``): each turn as an episode, as the REST door saves
   a transcript: content = the text (plus "[image: <caption>]" when the turn shared an image), speaker,
   occurred_at = the session's time, source_session "<conversation>:<session>", source_turn = the turn id,
   source_seq = its position. Facts (``memories``): each as an MCP ``memory_save`` of kind ``fact`` saves it:
   the content alone, saved at the session's time (``now``, so occurred_at = created_at = it), with no speaker,
   session or turn. Evidence is never passed to the store.
3. Query: each question's text, verbatim, through `memory.search.memory_search` scoped to that palace, with
   reinforcement and evidence batches off (a measurement must not change the ranking of the next question) — or
   through a plain baseline (`--method`, ops.eval.methods) over the same stored memories. Only then are the
   question's evidence and category read, to score the returned ranking.
4. Units. Transcripts: a returned memory counts for every turn it carries (its own, plus any restatement merged
   into it); the ranking is the hits' turns in order, without repeats. Facts: a returned memory is relevant when
   the evidence turns of the facts it holds (its own, plus merged restatements) meet the question's; Recall@k is
   the share of the question's evidence turns (those some fact cites) that the top-k memories cite.
5. Metrics per question, micro-averaged: Recall@k, any-hit@k, MRR (over the returned list, `SEARCH_DEPTH` hits),
   session any-hit@10 (sessions ranked by their best unit; a fact's session is its session time). Headline =
   categories 1-4; each category reported with its name and n.

`--background N` first fills three other palaces with N synthetic memories (ops.bench.search, as the search bench
does) and removes them afterwards, so quality is measured where the common-word bounds and the filtered vector
scan act.
"""

from __future__ import annotations

import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from memory.models import Memory
from memory.search import SearchRequest, memory_search, tuned
from ops.eval.datasets import (
    FACTS,
    TRANSCRIPTS,
    Conversation,
    DatasetError,
    load_dataset,
    parse_session_time,
    turn_content,
)
from ops.eval.methods import BASELINES, CachingEmbedder, Corpus
from palace.actors import Actor
from palace.models import Palace

__all__ = [
    "CATEGORY_NAMES",
    "METHODS",
    "DatasetError",
    "EvalReport",
    "evaluate_dataset",
    "load_dataset",
    "parse_session_time",
    "turn_content",
]

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
HEADLINE_CATEGORIES = (1, 2, 3, 4)
SEARCH_DEPTH = 50  # hits asked for per question: MRR is MRR@50, session ranking uses them all
SESSION_K = 10
METHODS = ("atrium", *BASELINES)


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


def score_ranking(
    *, ranked: list[tuple[frozenset[str], str]], wanted: set[str], wanted_sessions: set[str], ks: tuple[int, ...]
) -> dict[str, float]:
    """Metrics of one ranking: `ranked` holds, per returned unit, the evidence turns it covers and its session."""
    metrics: dict[str, float] = {}
    for k in ks:
        found = set[str]().union(*(turns for turns, _ in ranked[:k])) & wanted
        metrics[f"recall@{k}"] = len(found) / len(wanted) if wanted else 0.0
    for k in ks:
        metrics[f"any_hit@{k}"] = float(any(turns & wanted for turns, _ in ranked[:k]))
    metrics["mrr"] = next((1.0 / rank for rank, (turns, _) in enumerate(ranked, start=1) if turns & wanted), 0.0)
    sessions: list[str] = []
    for _, session in ranked:
        if session not in sessions:
            sessions.append(session)
    metrics[f"session_any_hit@{SESSION_K}"] = float(bool(wanted_sessions & set(sessions[:SESSION_K])))
    return metrics


def score_question(
    *, ranked_turns: list[str], turn_session: dict[str, str], evidence: Iterable[str], ks: tuple[int, ...]
) -> dict[str, float]:
    """Transcript scoring: the ranking is a list of turn ids."""
    wanted = {e for e in evidence if e in turn_session}
    return score_ranking(
        ranked=[(frozenset([t]), turn_session[t]) for t in ranked_turns],
        wanted=wanted,
        wanted_sessions={turn_session[e] for e in wanted},
        ks=ks,
    )


def score_conversation(
    conv: Conversation, rankings: list[list[list[str]]], ks: tuple[int, ...]
) -> list[tuple[int, dict[str, float]]]:
    """(category, metrics) per question. A ranking lists, per returned memory, the dataset ids it holds."""
    out = []
    if conv.kind == TRANSCRIPTS:
        turn_session = {t.id: t.session for t in conv.turns}
        for question, ranking in zip(conv.questions, rankings, strict=True):
            turns: list[str] = []
            for held in ranking:
                turns.extend(t for t in held if t not in turns)
            metrics = score_question(ranked_turns=turns, turn_session=turn_session, evidence=question.evidence, ks=ks)
            out.append((question.category, metrics))
        return out
    memos = {m.id: m for m in conv.memories}
    known = conv.known_turns()
    for question, ranking in zip(conv.questions, rankings, strict=True):
        wanted = set(question.evidence) & known
        ranked = [(frozenset(e for i in held for e in memos[i].evidence), memos[held[0]].session) for held in ranking]
        sessions = {m.session for m in conv.memories if set(m.evidence) & wanted}
        out.append((question.category, score_ranking(ranked=ranked, wanted=wanted, wanted_sessions=sessions, ks=ks)))
    return out


# --- running -------------------------------------------------------------------------------------------------


@dataclass
class EvalReport:
    ks: tuple[int, ...]
    kind: str
    method: str
    background: int
    headline: dict[str, float | int]
    by_category: dict[str, dict[str, float | int]]
    overall: dict[str, float | int]
    ingest_seconds: float
    query_seconds: float
    items: int
    dispositions: dict[str, int]
    modes: dict[str, int]
    embedding_cache: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "dataset": self.kind,
            "method": self.method,
            "background_memories": self.background,
            "headline": self.headline,
            "by_category": self.by_category,
            "all_categories": self.overall,
            "ingest_seconds": round(self.ingest_seconds, 2),
            "query_seconds": round(self.query_seconds, 2),
            "items": self.items,
            "dispositions": self.dispositions,
            "search_modes": self.modes,
            "protocol": self._protocol(),
        }
        if self.kind == TRANSCRIPTS:
            data["turns"] = self.items
        if self.embedding_cache is not None:
            data["embedding_cache"] = self.embedding_cache
        return data

    def _protocol(self) -> dict[str, Any]:
        search = (
            f"memory_search, top {SEARCH_DEPTH}, reinforcement and batches off"
            if self.method == "atrium"
            else f"plain {self.method} over the stored memories (ops.eval_methods), top {SEARCH_DEPTH}"
        )
        common = {"search": search, "mrr_depth": SEARCH_DEPTH, "background": _background_text(self.background)}
        if self.kind == FACTS:
            return {
                "unit": "one memory per fact, saved as an MCP memory_save of kind fact (content only, at its "
                "session time; no speaker, session or turn)",
                "relevance": "a returned memory is relevant when the evidence turns it cites meet the question's",
                "merged_memories": "a memory counts for every fact it absorbed (listed in dispositions.merge)",
                **common,
            }
        return {
            "unit": "one memory per turn, saved through memory_save (kind episode, source eval)",
            "stored_with_turn": "speaker, occurred_at = session_time, source_session, source_turn",
            "image_captions": "included in the content as [image: …]",
            "merged_memories": "a memory counts for every turn it absorbed (listed in dispositions.merge)",
            **common,
        }


def _background_text(n: int) -> str:
    if not n:
        return "none: the conversation's palace is alone in the table"
    return f"{n} synthetic memories in three other palaces (as atrium bench search loads them)"


class _Rollback(Exception):
    pass


def _throwaway_user() -> Any:
    from palace.services import user_create

    return user_create(username=f"eval-{secrets.token_hex(6)}", actor=Actor.for_system("eval"))


def _ingest(*, conv: Conversation, palace: Palace, actor: Actor, dispositions: Counter[str]) -> dict[int, list[str]]:
    """Save the conversation's items; return, per stored memory, the dataset ids (turns or facts) it holds."""
    from memory.save import memory_save

    holds: dict[int, list[str]] = {}
    if conv.kind == TRANSCRIPTS:
        for seq, turn in enumerate(conv.turns, start=1):
            result = memory_save(
                palace=palace,
                actor=actor,
                content=turn.text,
                kind="episode",
                source="eval",
                occurred_at=turn.time,
                speaker=turn.speaker,
                source_session=f"{conv.id}:{turn.session}",
                source_turn=turn.id,
                source_seq=seq,
                enrol_review=False,
            )
            dispositions[result.disposition] += 1
            if result.memory is not None:
                holds.setdefault(result.memory.pk, []).append(turn.id)
        return holds
    for memo in conv.memories:
        # As the MCP door calls it (content and kind only); the session time stands in for the moment of saving.
        result = memory_save(palace=palace, actor=actor, content=memo.text, kind="fact", source="eval", now=memo.time)
        dispositions[result.disposition] += 1
        if result.memory is not None:
            holds.setdefault(result.memory.pk, []).append(memo.id)
    return holds


def _search(*, conv: Conversation, user: Any, palace: Palace, method: str, modes: Counter[str]) -> list[list[int]]:
    """The ranked memory ids for each question, reading nothing but the question text."""
    rankings = []
    corpus = None
    if method != "atrium":
        stored = Memory.objects.filter(palace=palace, status=Memory.Status.ACTIVE).order_by("pk")
        corpus = Corpus(list(stored.values_list("pk", "content", "embedding")))
    for question in conv.questions:
        if corpus is not None:
            rankings.append(corpus.rank(method, question.text, SEARCH_DEPTH))
            modes[method] += 1
            continue
        result = memory_search(
            user=user,
            request=SearchRequest(query=question.text, palace_ids=[palace.pk], limit=SEARCH_DEPTH, rewrite=False),
            reinforce=False,
            register_batch=False,
        )
        modes[result.mode + ("" if not result.degraded else f" (degraded: {', '.join(result.degraded)})")] += 1
        if result.common_words:  # the lexical arm's common-word bound acted on this question
            modes["with common words"] += 1
        if not result.matched:
            modes["no match"] += 1
        rankings.append([hit.memory.pk for hit in result.hits])
    return rankings


def _run_conversation(
    *, conv: Conversation, method: str, dispositions: Counter[str], modes: Counter[str], timing: list[float]
) -> list[list[list[str]]]:
    """Ingest and query one conversation in a transaction that is rolled back; per question, per returned memory,
    the dataset ids it holds."""
    return run_variants(conv=conv, method=method, variants=[{}], dispositions=dispositions, modes=modes, timing=timing)[
        0
    ]


def run_variants(
    *,
    conv: Conversation,
    method: str,
    variants: list[dict[str, float]],
    dispositions: Counter[str],
    modes: Counter[str],
    timing: list[float],
) -> list[list[list[list[str]]]]:
    """`_run_conversation` with the conversation ingested once and every question asked once per variant of the
    tuned constants (memory.search.tuned; {} = as shipped): per variant, per question, per returned memory, the
    dataset ids it holds."""
    rankings: list[list[list[list[str]]]] = []
    try:
        with transaction.atomic():
            user = _throwaway_user()
            palace = Palace.objects.get(personal_owner=user)
            started = time.perf_counter()
            holds = _ingest(conv=conv, palace=palace, actor=Actor.for_user(user), dispositions=dispositions)
            timing[0] += time.perf_counter() - started
            for variant in variants:
                started = time.perf_counter()
                with tuned(**variant):
                    ids = _search(conv=conv, user=user, palace=palace, method=method, modes=modes)
                timing[1] += time.perf_counter() - started
                rankings.append([[holds[pk] for pk in ranking if pk in holds] for ranking in ids])
            raise _Rollback
    except _Rollback:
        pass
    return rankings


def evaluate_dataset(
    *,
    conversations: list[Conversation],
    ks: tuple[int, ...] = (5, 10),
    method: str = "atrium",
    background: int = 0,
    embedding_cache: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> EvalReport:
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}")
    ks = tuple(sorted(set(ks)))
    say = progress or (lambda _line: None)
    headline, overall = _Tally(ks), _Tally(ks)
    by_category: dict[int, _Tally] = {}
    dispositions: Counter[str] = Counter()
    modes: Counter[str] = Counter()
    timing = [0.0, 0.0]
    with ExitStack() as stack:
        cache = use_cache(stack, embedding_cache)
        if background:
            _fill_background(stack, background, say)
        for conv in conversations:
            rankings = _run_conversation(
                conv=conv, method=method, dispositions=dispositions, modes=modes, timing=timing
            )
            # Scoring: only now are evidence and categories read.
            for category, metrics in score_conversation(conv, rankings, ks):
                overall.add(metrics)
                if category in HEADLINE_CATEGORIES:
                    headline.add(metrics)
                by_category.setdefault(category, _Tally(ks)).add(metrics)
            unit = "turns" if conv.kind == TRANSCRIPTS else "facts"
            say(f"{conv.id}: {len(conv.turns or conv.memories)} {unit}, {len(conv.questions)} questions")
        cache_report = None if cache is None else {"hits": cache.hits, "misses": cache.misses}
    return EvalReport(
        ks=ks,
        kind=conversations[0].kind if conversations else TRANSCRIPTS,
        method=method,
        background=background,
        headline=headline.summary(),
        by_category={
            CATEGORY_NAMES.get(c, f"category-{c}"): tally.summary() for c, tally in sorted(by_category.items())
        },
        overall=overall.summary(),
        ingest_seconds=timing[0],
        query_seconds=timing[1],
        items=sum(len(c.turns or c.memories) for c in conversations),
        dispositions=dict(dispositions),
        modes=dict(modes),
        embedding_cache=cache_report,
    )


def use_cache(stack: ExitStack, path: str | Path | None) -> CachingEmbedder | None:
    if path is None:
        return None
    from memory.providers import get_embedder, set_embedder

    inner = get_embedder()
    if inner is None:
        return None
    cache = CachingEmbedder(inner, path)
    set_embedder(cache)
    stack.callback(cache.close)
    stack.callback(set_embedder, None, active=False)
    return cache


def _fill_background(stack: ExitStack, count: int, say: Callable[[str], None]) -> None:
    from ops.bench import background_fill, background_remove

    owners = background_fill(memories=count, progress=say)
    stack.callback(background_remove, owners, progress=say)
