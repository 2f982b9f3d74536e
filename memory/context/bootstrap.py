"""The bootstrap block a session starts from (`memory_handoff_load`, `GET /api/v1/bootstrap.txt`): the caller's
handoff in a palace, the curated profiles (theirs and the project's), then the most relevant recent memories of
that palace, within one token budget, wrapped like every recall.

Sections claim the budget in that order; each is cut (never split inside a grapheme) to what is left, and memory
lines that do not fit are counted on a `+N more` line. "Most relevant recent" is a rule, not a model: the active
memories of the last RECENT_DAYS days ranked by importance, then confidence, then recency (up to TOP_N).
Rendering is a pure function (`bootstrap_render`) so the budget promise is testable without a database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from memory.context.curated_profile import curated_block
from memory.context.handoff import handoff_current, handoff_render
from memory.context.standing_profile import longest_fitting
from memory.models import Memory
from memory.text import estimate_tokens, truncate_to_chars, wrap_memory_context
from palace.actors import Actor
from palace.models import Palace

BOOTSTRAP_TOKEN_BUDGET = 1024
BOOTSTRAP_MIN_TOKEN_BUDGET = 128
TOP_N = 8
RECENT_DAYS = 30
LINE_CHARS = 200

HEADER = "Session bootstrap ({where}): your handoff, the curated profile, recent memories."
NO_HANDOFF = "Handoff: none saved yet (memory_handoff_save at the end of a session)."
RECENT_HEADER = "Recent memories (importance, then recency; last {days} days):"


@dataclass(frozen=True)
class RecentItem:
    memory_id: int
    kind: str
    content: str


@dataclass(frozen=True)
class Bootstrap:
    text: str
    tokens: float
    budget: int
    handoff_version: int
    handoff_truncated: bool
    curated_truncated: bool
    memories: list[int]
    more: int


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _memory_line(item: RecentItem, body: str) -> str:
    return f"- #{item.memory_id} {item.kind} — {body}"


def _more(n: int) -> str:
    return f"+{n} more (memory_search or memory_examine to read them)"


def bootstrap_render(
    *,
    where: str,
    handoff: str,
    handoff_version: int,
    curated: str,
    items: Sequence[RecentItem],
    total: int,
    budget: int = BOOTSTRAP_TOKEN_BUDGET,
) -> Bootstrap:
    budget = max(budget, BOOTSTRAP_MIN_TOKEN_BUDGET)
    total = max(total, len(items))
    head = [HEADER.format(where=where)]

    def compose(h: str, c: str, lines: Sequence[str], shown: int) -> str:
        parts = [*head, h or NO_HANDOFF]
        if c:
            parts += ["Curated profile:", c]
        if lines:
            parts += [RECENT_HEADER.format(days=RECENT_DAYS), *lines]
        if total - shown > 0:
            parts.append(_more(total - shown))
        return wrap_memory_context("\n".join(parts))

    def fits(text: str) -> bool:
        return estimate_tokens(text) <= budget

    handoff = handoff.strip()
    fitted_handoff = (longest_fitting(handoff, lambda h: fits(compose(h, "", [], 0))) if handoff else "") or ""
    curated = curated.strip()
    fitted_curated = ""
    if curated:
        fitted_curated = longest_fitting(curated, lambda c: fits(compose(fitted_handoff, c, [], 0))) or ""
    lines: list[str] = []
    shown: list[int] = []
    for item in items:
        body = truncate_to_chars(_one_line(item.content), LINE_CHARS)
        candidate = [*lines, _memory_line(item, body)]
        if not fits(compose(fitted_handoff, fitted_curated, candidate, len(candidate))):
            break
        lines, shown = candidate, [*shown, item.memory_id]
    text = compose(fitted_handoff, fitted_curated, lines, len(lines))
    if not fits(text):  # a budget too small for even the header: keep the promise
        text = wrap_memory_context(head[0])
        fitted_handoff, fitted_curated, shown = "", "", []
    return Bootstrap(
        text=text,
        tokens=estimate_tokens(text),
        budget=budget,
        handoff_version=handoff_version,
        handoff_truncated=fitted_handoff != handoff,
        curated_truncated=fitted_curated != curated,
        memories=shown,
        more=total - len(shown),
    )


def recent_items(*, palace_id: int, now: datetime | None = None, limit: int = TOP_N) -> tuple[list[RecentItem], int]:
    """The palace's most relevant recent active memories (see the module docstring) and how many recent ones exist."""
    since = (now or timezone.now()) - timedelta(days=RECENT_DAYS)
    recent = Memory.objects.filter(palace_id=palace_id, status=Memory.Status.ACTIVE, created_at__gte=since)
    rows = recent.order_by("-importance", "-confidence", "-created_at", "-pk").only("pk", "kind", "content")[:limit]
    return [RecentItem(m.pk, m.kind, m.content) for m in rows], recent.count()


def bootstrap_build(
    *, actor: Actor, palace: Palace, personal: Palace, budget: int = BOOTSTRAP_TOKEN_BUDGET
) -> Bootstrap:
    """The bootstrap block for the actor in `palace` (resolved by the caller's access check); `personal` is the
    actor's personal palace, whose curated profile comes first."""
    handoff = handoff_current(palace_id=palace.pk, actor=actor)
    palaces = [personal] if personal.pk == palace.pk else [personal, palace]
    items, total = recent_items(palace_id=palace.pk)
    return bootstrap_render(
        where=palace.label,
        handoff=handoff_render(handoff) if handoff is not None else "",
        handoff_version=handoff.version if handoff is not None else 0,
        curated=curated_block(palaces=palaces),
        items=items,
        total=total,
        budget=budget,
    )
