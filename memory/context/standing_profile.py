"""The grand hall: a user's standing profile, injected at session start and served by the `memory_profile` tool.

Numbers come from the dsh-engram seed (v0.7.5, v0.7.8): up to 8 entries within 1024 tokens (CJK counted at 1.5
tokens per character, other text at 4 characters per token); the first entry's body may use 160 characters, each
later one 0.9 times the previous, never less than 24. An entry that still does not fit is cut further, then
degrades to a `#id` index line; the trailing `+N more` line and the due-review line count against the budget too,
so the whole output, wrapper included, never exceeds it.

Rendering is a pure function (`standing_profile_render`) so the budget promise can be property-tested without a
database; `standing_profile_build` loads the inputs. The due-review count is passed in by the caller: the review app
sits above this one and memory never imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory.models import Memory
from memory.text import estimate_tokens, truncate_to_chars, wrap_memory_context

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

TOP_N = 8
TOKEN_BUDGET = 1024
ITEM_BUDGET_START = 160
ITEM_BUDGET_DECAY = 0.9
ITEM_BUDGET_FLOOR = 24
MIN_TOKEN_BUDGET = 128

HEADER = "Grand hall: your standing profile (personal palace)."
CURATED_HEADER = "Curated profile:"
UNSLOTTED = "unslotted"


@dataclass(frozen=True)
class StandingProfileItem:
    """One candidate memory, as the renderer needs it."""

    memory_id: int
    coordinate: str  # room#slot, or "unslotted"
    kind: str
    placard: str
    content: str


@dataclass(frozen=True)
class StandingProfileLine:
    memory_id: int
    coordinate: str
    kind: str
    placard: str
    body: str  # "" on an index line
    indexed: bool  # degraded to a `#id` index line
    truncated: bool


@dataclass(frozen=True)
class StandingProfile:
    text: str
    lines: list[StandingProfileLine] = field(default_factory=list)
    curated: bool = False
    curated_truncated: bool = False
    more: int = 0
    reviews_due: int | None = None
    tokens: float = 0.0
    budget: int = TOKEN_BUDGET
    total: int = 0


def item_char_budget(index: int, *, start: int, decay: float, floor: int) -> int:
    """Body characters allowed for the entry at `index` (0-based): start × decay^index, never below floor."""
    return max(floor, int(start * decay**index))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _entry_line(item: StandingProfileItem, body: str) -> str:
    placard = _one_line(item.placard)
    head = f"- #{item.memory_id} {item.coordinate} · {item.kind}"
    if placard:
        head += f" · {placard}"
    return f"{head} — {body}" if body else head


def _index_line(item: StandingProfileItem) -> str:
    return f"- #{item.memory_id} {item.coordinate}"


def _more_line(more: int) -> str:
    return f"+{more} more (memory_search or memory_examine to read them)"


def _due_line(reviews_due: int) -> str:
    return f"Reviews due: {reviews_due} (memory_review_queue, then memory_report with a grade)"


def _compose(curated: str, lines: Sequence[str], more: int, reviews_due: int | None) -> str:
    parts = [HEADER]
    if curated:
        parts += [CURATED_HEADER, curated]
    parts += list(lines)
    if more > 0:
        parts.append(_more_line(more))
    if reviews_due:
        parts.append(_due_line(reviews_due))
    return wrap_memory_context("\n".join(parts))


def longest_fitting(text: str, fits: Callable[[str], bool], *, low: int = 0) -> str | None:
    """The longest cut of `text` (at least `low` characters) for which `fits` holds, or None."""
    if fits(text):
        return text
    lo, hi, best = max(low, 1), len(text) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        cut = truncate_to_chars(text, mid)
        if fits(cut):
            best, lo = cut, mid + 1
        else:
            hi = mid - 1
    return best


def standing_profile_render(
    *,
    items: Sequence[StandingProfileItem],
    total: int,
    curated: str = "",
    reviews_due: int | None = None,
    top_n: int = TOP_N,
    budget: int = TOKEN_BUDGET,
    item_start: int = ITEM_BUDGET_START,
    item_decay: float = ITEM_BUDGET_DECAY,
    item_floor: int = ITEM_BUDGET_FLOOR,
) -> StandingProfile:
    """Lay out the profile within `top_n` entries and `budget` tokens (the wrapper counts too).

    1. Curated text goes first and claims the budget first; it is cut if it would crowd out the tail lines.
    2. Entries in rank order, each body cut to its graduated character budget.
    3. An entry is cut further (never below the floor) so that the entries after it still fit as index lines;
       when even that fails it degrades to a `#id` index line, and so do the rest.
    4. Whatever is not shown is counted on a `+N more` line; the due-review line closes the profile.
    """
    budget = max(budget, MIN_TOKEN_BUDGET)
    total = max(total, len(items))
    curated = (curated or "").strip()

    def fits_with(curated_text: str, lines: Sequence[str], shown: int) -> bool:
        return estimate_tokens(_compose(curated_text, lines, total - shown, reviews_due)) <= budget

    curated_truncated = False
    if curated:
        fitted = longest_fitting(curated, lambda c: fits_with(c, [], 0))
        curated_truncated = fitted != curated
        curated = fitted or ""

    rendered: list[str] = []
    lines: list[StandingProfileLine] = []
    degraded = False
    candidates = list(items[: max(top_n, 0)])
    for index, item in enumerate(candidates):
        shown = len(rendered) + 1
        chosen: tuple[str, StandingProfileLine] | None = None
        if not degraded:
            content = _one_line(item.content)
            allowed = item_char_budget(index, start=item_start, decay=item_decay, floor=item_floor)
            body = truncate_to_chars(content, allowed)
            # Keep room for the entries after this one as index lines: cut bodies before anything degrades.
            reserve = [_index_line(later) for later in candidates[index + 1 :]]

            def fits_body(
                candidate: str, item: StandingProfileItem = item, shown: int = shown, reserve: list[str] = reserve
            ) -> bool:
                lines = [*rendered, _entry_line(item, candidate), *reserve]
                return fits_with(curated, lines, shown + len(reserve))

            fitted = longest_fitting(body, fits_body, low=min(item_floor, len(body)))
            if fitted:
                line = StandingProfileLine(
                    item.memory_id, item.coordinate, item.kind, item.placard, fitted, False, fitted != content
                )
                chosen = (_entry_line(item, fitted), line)
        if chosen is None:
            degraded = True
            index_text = _index_line(item)
            if not fits_with(curated, [*rendered, index_text], shown):
                break
            chosen = (
                index_text,
                StandingProfileLine(item.memory_id, item.coordinate, item.kind, item.placard, "", True, True),
            )
        rendered.append(chosen[0])
        lines.append(chosen[1])

    text = _compose(curated, rendered, total - len(rendered), reviews_due)
    if estimate_tokens(text) > budget:  # only with a budget too small for the header and tail: keep the promise
        text = wrap_memory_context(_more_line(total)) if total else wrap_memory_context("")
        lines, curated = [], ""
    return StandingProfile(
        text=text,
        lines=lines,
        curated=bool(curated),
        curated_truncated=curated_truncated,
        more=total - len(lines),
        reviews_due=reviews_due,
        tokens=estimate_tokens(text),
        budget=budget,
        total=total,
    )


def standing_profile_items(*, palace_id: int, limit: int) -> tuple[list[StandingProfileItem], int]:
    """The top active memories of a palace for the profile, and how many active memories it holds.

    Rank: importance, then confidence, then proof (hit count), then the newest.
    """
    active = Memory.objects.filter(palace_id=palace_id, status=Memory.Status.ACTIVE)
    rows = active.select_related("slot__room").order_by(
        "-importance", "-confidence", "-hit_count", "-created_at", "-pk"
    )[:limit]
    items = [
        StandingProfileItem(
            memory_id=m.pk,
            coordinate=m.slot.coordinate if m.slot is not None else UNSLOTTED,
            kind=m.kind,
            placard=m.placard,
            content=m.content,
        )
        for m in rows
    ]
    return items, active.count()


def standing_profile_build(
    *,
    user: AbstractBaseUser,
    palace_id: int,
    curated: str = "",
    reviews_due: int | None = None,
    top_n: int = TOP_N,
    budget: int = TOKEN_BUDGET,
) -> StandingProfile:
    """The profile for `user` from their personal palace (`palace_id`, resolved by the caller's access check).

    `curated` is the curated profile text to put first (memory.context.curated_profile.curated_block: the user's own,
    then a project's when the door was asked for one); it claims the budget before the derived entries.
    """
    items, total = standing_profile_items(palace_id=palace_id, limit=max(top_n, 0))
    return standing_profile_render(
        items=items, total=total, curated=curated, reviews_due=reviews_due, top_n=top_n, budget=budget
    )
