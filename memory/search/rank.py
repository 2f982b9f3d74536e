"""Ranking for memory.search: the similarity floor, score-aware fusion, one hop over edges, episode context, the
speaker cue and the recency/proof boosts. Pure Python over the arms' rows (memory.search.arms); no SQL here.

The recipe, each step measured on the LoCoMo dev split (the tuning set; README "Retrieval quality"), transcripts
and agent-written facts alike:

1. Floor: a candidate that shares no word with the query (ts_rank 0) must stand out from the background: its
   cosine must exceed the median cosine of the semantic arm's candidates by the embedder's margin (e5: 0.06), or,
   when the arm found too few candidates to tell a background (< MIN_BACKGROUND), reach the absolute floor (e5:
   0.80). Otherwise it is only the nearest thing in a palace that holds nothing on the subject. Relative, because
   e5's cosines sit at different heights per language: unrelated English text ~0.75-0.80, unrelated Chinese text
   ~0.82-0.86, a relevant English question asked of Chinese memories ~0.78 (README, "Saying when nothing matched").
2. Fusion by scores, not ranks: fused = SEMANTIC_WEIGHT * cos' + (1 - SEMANTIC_WEIGHT) * lex', where cos' is
   the cosine scaled over the candidates' range (at least COSINE_SPREAD) and lex' the ts_rank over the best one.
   Plain RRF ties every pair of one-arm candidates at the same rank and ignores how far apart they are; measured,
   it ranked worse on both kinds, and a tie-break by id alone moved Recall@10 on facts by 2.5 points. The cosine
   is first blended with its best edge neighbour's (NEIGHBOUR_SHARE): a transcript turn often means what the turn
   before it asked ("Yes, last week!"), as its full text carries the previous turn at low weight.
3. One hop over edges (next, supports, refines, related): a neighbour gains HOP_SHARE of its best parent's score,
   or joins with it, labelled by the edge.
4. Episode context: memories saved in one episode support each other. An episode is the source session when the
   memory has one (a transcript's session), else a run of one author's saves less than EPISODE_GAP apart (the facts
   an agent saves in one working session). Each candidate gains EPISODE_SHARE of the best other candidate of its
   episode.
5. Speaker cue: a question naming exactly one known person adds SPEAKER_CUE to what that person said. Entity cue:
   a memory linked to an entity the question names (by name or alias, memory.knowledge.extraction.entity_cues) gains
   ENTITY_CUE, labelled `ent`.
6. Boosts (multiplicative): recency of last access, proof (hit count) and confidence, weights from the settings.
   Confidence enters as (1 + w_c * (confidence − 0.7)), relative to the confidence every memory starts with: a
   memory nothing has reinforced or discredited scores exactly as before (w_c 0.2: from ×0.86 at confidence 0 to
   ×1.06 at 1), one whose use failed (−0.1 a report) sinks a little below an equally relevant one that answered
   (+0.05 a cited assess).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings

from memory.search.arms import Row

__all__ = ["Candidate", "apply_floor", "rank"]

SEMANTIC_WEIGHT = 0.55
# A query that is a dialogue (memory.search.views) carries its subject in a few of many words: the full-text arm
# matches the small talk too, so such a query weighs the semantic arm at DIALOGUE_SEMANTIC_WEIGHT instead.
DIALOGUE_SEMANTIC_WEIGHT = 0.85
FUSION_ADAPT = 0.0  # how far the arms' peakedness may move SEMANTIC_WEIGHT per query (step 2)
HOP_SHARE = 0.2
EPISODE_SHARE = 0.2
EPISODE_GAP = timedelta(minutes=30)
SPEAKER_CUE = 0.2
ENTITY_CUE = 0.1
# Cosines are scaled over the candidates' range, but never a range narrower than this: in a small palace two
# candidates 0.01 apart must not look a whole unit apart (measured the same on LoCoMo as an unbounded range).
COSINE_SPREAD = 0.1
NEIGHBOUR_SHARE = 0.25  # weight of the best edge neighbour's cosine in a candidate's own (step 2)
# How far above the background (the median cosine of the semantic arm's candidates) a candidate that shares no word
# with the query must be, and the absolute floor used when there are too few candidates for a background, per
# embedding model; calibrated on the dev sets (README). A model not listed has no floor (reported as None).
FLOOR_MARGINS = {"multilingual-e5-small": 0.06}
FLOORS = {"multilingual-e5-small": 0.80}
MIN_BACKGROUND = 8
CONFIDENCE_START = 0.7  # Memory.confidence's default: the neutral point of the confidence factor (step 6)


@dataclass
class Candidate:
    row: Row
    ranks: dict[str, int] = field(default_factory=dict)
    cosine: float | None = None
    lexical: float = 0.0
    fused: float = 0.0
    expanded_from: int | None = None
    edge_kind: str = ""
    score: float = 0.0
    via: str = ""  # the rewritten query that found it (memory.search.rewrite), "" for the query as given
    entity: bool = False  # linked to an entity the query names (step 5): labelled "ent"

    @property
    def memory_id(self) -> int:
        return self.row.id

    @property
    def label(self) -> str:
        if self.expanded_from is not None:
            found = f"edge:{self.edge_kind} from #{self.expanded_from}"
        else:
            found = " + ".join(f"{arm}#{self.ranks[arm]}" for arm in ("sem", "lex") if arm in self.ranks)
        if self.entity:
            found += " + ent"
        return f"{found} via {self.via}" if self.via else found


def floor_for(model: str, *, background: list[float]) -> float | None:
    """The cosine a candidate sharing no word with the query needs: the background's median plus the margin, or
    the absolute floor when `background` (the semantic arm's cosines) is too short. ATRIUM_SEARCH_FLOOR_MARGIN and
    ATRIUM_SEARCH_FLOOR override the calibrated values; None when the model has none."""
    margin = getattr(settings, "ATRIUM_SEARCH_FLOOR_MARGIN", None)
    margin = FLOOR_MARGINS.get(model) if margin is None else float(margin)
    absolute = getattr(settings, "ATRIUM_SEARCH_FLOOR", None)
    absolute = FLOORS.get(model) if absolute is None else float(absolute)
    if len(background) >= MIN_BACKGROUND and margin is not None:
        return round(statistics.median(background) + margin, 4)
    return absolute


def pool(arms: dict[str, list[Row]], cosines: dict[int, float]) -> dict[int, Candidate]:
    """Every candidate of either arm once, with its rank in each arm and both similarities."""
    found: dict[int, Candidate] = {}
    for arm, rows in arms.items():
        for rank, row in enumerate(rows, start=1):
            candidate = found.setdefault(row.id, Candidate(row=row, lexical=row.lexical))
            candidate.ranks[arm] = rank
            if row.cosine is not None:
                candidate.cosine = row.cosine
            candidate.lexical = max(candidate.lexical, row.lexical)
    for memory_id, cosine in cosines.items():
        if memory_id in found:
            found[memory_id].cosine = cosine
    return found


def apply_floor(found: dict[int, Candidate], floor: float | None) -> int:
    """Drop the candidates that share no word with the query and sit below the floor; return how many."""
    if floor is None:
        return 0
    below = [m for m, c in found.items() if c.lexical <= 0 and c.cosine is not None and c.cosine < floor]
    for memory_id in below:
        del found[memory_id]
    return len(below)


def _neighbour_context(found: dict[int, Candidate], edges: list[tuple[Row, int, str]]) -> dict[int, float]:
    """Each candidate's cosine blended with the best cosine among its edge neighbours (step 2)."""
    best: dict[int, float] = {}
    for row, parent_id, _ in edges:
        if row.cosine is not None and row.cosine > best.get(parent_id, -2.0):
            best[parent_id] = row.cosine
    return {
        m: (c.cosine + NEIGHBOUR_SHARE * best[m]) / (1 + NEIGHBOUR_SHARE) if m in best else c.cosine
        for m, c in found.items()
        if c.cosine is not None
    }


def _peak(values: list[float]) -> float:
    """How far the best value stands out: best minus median, both scaled as the fusion scales them (0 for none)."""
    return max(values) - statistics.median(values) if values else 0.0


def semantic_weight(cosines: list[float], lexicals: list[float], *, dialogue: bool = False) -> float:
    """The semantic arm's weight for this query: DIALOGUE_SEMANTIC_WEIGHT for a dialogue, else SEMANTIC_WEIGHT, moved
    by FUSION_ADAPT times the difference of the arms' peaks (each arm's best minus its median, on the scales the
    fusion uses: cosine over the candidates' range, at least COSINE_SPREAD; ts_rank over the best). A flat arm (a
    long query's words matching everything a little) then counts less than one that singles a memory out."""
    base = DIALOGUE_SEMANTIC_WEIGHT if dialogue else SEMANTIC_WEIGHT
    if FUSION_ADAPT <= 0 or not cosines:
        return base
    low, spread = min(cosines), max(max(cosines) - min(cosines), COSINE_SPREAD)
    best_lexical = max(lexicals, default=0.0)
    sem = _peak([(c - low) / spread for c in cosines])
    lex = _peak([v / best_lexical for v in lexicals if v > 0]) if best_lexical > 0 else 0.0
    return min(0.95, max(0.05, base + FUSION_ADAPT * (sem - lex)))


def _fuse(found: dict[int, Candidate], edges: list[tuple[Row, int, str]], *, dialogue: bool) -> None:
    context = _neighbour_context(found, edges)
    cosines = list(context.values())
    low, high = (min(cosines), max(cosines)) if cosines else (0.0, 0.0)
    best_lexical = max((c.lexical for c in found.values()), default=0.0)
    weight = semantic_weight(cosines, [c.lexical for c in found.values()], dialogue=dialogue) if cosines else 0.0
    for m, c in found.items():
        cos = (context[m] - low) / max(high - low, COSINE_SPREAD) if m in context else 0.0
        lex = c.lexical / best_lexical if best_lexical > 0 else 0.0
        c.fused = weight * cos + (1 - weight) * lex


def _hop(found: dict[int, Candidate], edges: list[tuple[Row, int, str]], base: dict[int, float]) -> None:
    best: dict[int, tuple[float, int, str, Row]] = {}
    for row, parent_id, edge_kind in edges:
        share = HOP_SHARE * base.get(parent_id, 0.0)
        if row.id not in best or share > best[row.id][0]:
            best[row.id] = (share, parent_id, edge_kind, row)
    for memory_id, (share, parent_id, edge_kind, row) in best.items():
        existing = found.get(memory_id)
        if existing is not None:
            existing.fused = base[memory_id] + share
        else:
            found[memory_id] = Candidate(
                row=row,
                cosine=row.cosine,
                lexical=row.lexical,
                fused=share,
                expanded_from=parent_id,
                edge_kind=edge_kind,
            )


def _episodes(candidates: list[Candidate]) -> list[list[Candidate]]:
    """Candidates grouped by episode: the source session, else one author's saves less than EPISODE_GAP apart."""
    by_session: dict[str, list[Candidate]] = {}
    loose: dict[int | None, list[Candidate]] = {}
    for c in candidates:
        if c.row.episode:
            by_session.setdefault(c.row.episode, []).append(c)
        else:
            loose.setdefault(c.row.author, []).append(c)
    groups = [g for g in by_session.values() if len(g) > 1]
    for saves in loose.values():
        saves.sort(key=lambda c: c.row.created_at)
        run = [saves[0]]
        for c in saves[1:]:
            if c.row.created_at - run[-1].row.created_at <= EPISODE_GAP:
                run.append(c)
                continue
            if len(run) > 1:
                groups.append(run)
            run = [c]
        if len(run) > 1:
            groups.append(run)
    return groups


def _episode_context(found: dict[int, Candidate], base: dict[int, float]) -> None:
    members = [c for c in found.values() if c.memory_id in base]
    for group in _episodes(members):
        ordered = sorted((base[c.memory_id] for c in group), reverse=True)
        for c in group:
            other = ordered[1] if base[c.memory_id] == ordered[0] else ordered[0]
            c.fused += EPISODE_SHARE * other


def _boost(candidate: Candidate, *, now: datetime) -> float:
    """(1 + w_r * recency) * (1 + w_p * proof) * (1 + w_c * (confidence - 0.7)): recency decays with days since last
    access, proof grows with hits, confidence is the memory's own (0-1) against the starting 0.7."""
    factor = 1.0
    recency_weight = float(settings.ATRIUM_RECENCY_WEIGHT)
    window = int(settings.ATRIUM_DECAY_WINDOW_DAYS)
    if recency_weight > 0 and window > 0:
        age_days = max((now - candidate.row.touched).total_seconds() / 86400, 0.0)
        factor *= 1 + recency_weight * math.exp(-age_days / window)
    proof_weight = float(settings.ATRIUM_PROOF_WEIGHT)
    if proof_weight > 0 and candidate.row.hit_count > 0:
        factor *= 1 + proof_weight * min(1.0, math.log1p(candidate.row.hit_count) / math.log1p(50))
    confidence_weight = float(settings.ATRIUM_CONFIDENCE_WEIGHT)
    if confidence_weight > 0:
        factor *= 1 + confidence_weight * (min(1.0, max(0.0, candidate.row.confidence)) - CONFIDENCE_START)
    return factor


def rank(
    found: dict[int, Candidate],
    *,
    edges: list[tuple[Row, int, str]],
    named: list[str],
    now: datetime,
    entity_linked: frozenset[int] = frozenset(),
    dialogue: bool = False,
) -> list[Candidate]:
    """Steps 2-6 of the module docstring over the floored pool; best first (ties: the newer memory).
    `entity_linked`: the memories linked to an entity the query names; `dialogue`: the query is a dialogue."""
    _fuse(found, edges, dialogue=dialogue)
    base = {m: c.fused for m, c in found.items()}
    _hop(found, edges, base)
    _episode_context(found, base)
    for c in found.values():
        cue = SPEAKER_CUE if len(named) == 1 and c.row.speaker == named[0] else 0.0
        if c.memory_id in entity_linked:
            c.entity = True
            cue += ENTITY_CUE
        c.score = (c.fused + cue) * _boost(c, now=now)
    return sorted(found.values(), key=lambda c: (-c.score, -c.memory_id))
