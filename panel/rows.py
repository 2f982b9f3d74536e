"""The markup of the panel's long lists (memory rows, op-log rows, the corridor graph), written in Python.

A page of 50 memory rows through the template engine took about 100 ms of a list view's render on the reference
machine (some 35 nodes a row, every integer and lazy label localised one by one); the same markup from these
functions takes a few milliseconds. Every text value goes through esc() (the stdlib escape, quotes included);
the translated words are looked up once per list, not once per row.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Iterable, Mapping
from typing import Any

from django.middleware.csrf import get_token
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from palace.oplog import op_category
from panel import labels

TEXT_CHARS = 300
_PLACEHOLDER = 987654321


@functools.cache
def _url_pattern(name: str) -> str:
    return reverse(name, args=[_PLACEHOLDER])


def url_for(pk: Any, name: str) -> str:
    """reverse() once per URL name, then substitute the id (rows render hundreds of links; a full reverse per
    link was most of a list page's render time)."""
    return _url_pattern(name).replace(str(_PLACEHOLDER), str(int(pk)))


def clip(text: str, limit: int) -> str:
    """`truncatechars` without its cost: at most `limit` characters, the last one an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def esc(value: Any) -> str:
    """HTML-escape a text value (quotes too), as the template engine's autoescape does."""
    return html.escape(str(value))


def coordinate(memory: Any) -> str:
    slot = memory.slot
    return f"{labels.room_label(slot.room.name)}#{slot.number}" if slot is not None else ""


def _palace_name(palace_id: int, scope: Any, mine: str) -> str:
    return mine if scope.personal is not None and palace_id == scope.personal.pk else scope.project.origin_key


def memory_rows(
    memories: Iterable[Any],
    *,
    scope: Any,
    hits: Mapping[int, Any],
    request: Any,
    contested: Mapping[int, list[int]] | None = None,
) -> SafeString:
    """Memory rows; in the Both scope a palace's name heads each run of its rows (once, not on every row; each row
    still says it to a screen reader). `contested`: memory id -> its open contradictions (a badge to the Judge)."""
    words = {
        key: esc(word)
        for key, word in {
            "select": _("Select memory"),
            "place": _("Place in the palace"),
            "how": _("How it was found"),
            "mine": _("my palace"),
            "open": _("Open"),
            "forget": _("Forget"),
            "restore": _("Restore"),
            "contested": _("contradicted"),
            "judge": _("An open contradiction: decide it in Judge"),
        }.items()
    }
    csrf = f'<input type="hidden" name="csrfmiddlewaretoken" value="{esc(get_token(request))}">'
    judge = _plain_url("judge")
    out, previous = [], None
    for m in memories:
        if scope.both and m.palace_id != previous:
            name = esc(_palace_name(m.palace_id, scope, words["mine"]))
            out.append(f'<li class="palace-head" aria-hidden="true">{name}</li>\n')
            previous = m.palace_id
        badge = ""
        edges = (contested or {}).get(int(m.pk))
        if edges:
            badge = (
                f' <a class="badge contested" href="{judge}#edge-{int(edges[0])}" title="{words["judge"]}">'
                f"{words['contested']}{'' if len(edges) == 1 else f' × {len(edges)}'}</a>"
            )
        out.append(_memory_row(m, scope, hits, words, csrf, badge))
    return mark_safe("".join(out))  # noqa: S308 - escaped


def _memory_row(m: Any, scope: Any, hits: Mapping[int, Any], words: dict[str, str], csrf: str, badge: str) -> str:
    """One row; every text value goes through esc(), ids are integers and URLs come from reverse()."""
    pk = int(m.pk)
    detail_url = url_for(pk, "memory")
    writable = m.palace_id in scope.writable_ids
    kind, status = esc(m.kind), esc(m.status)
    if writable:
        label = f"{words['select']} {pk}"
        pick = f'<input class="pick" type="checkbox" name="ids" value="{pk}" form="batch" aria-label="{label}">'
    else:
        pick = '<span class="pick"></span>'
    line = f'<span class="tag">{esc(labels.kind_label(m.kind))}</span>'
    if m.placard:
        line += f' <strong class="placard">{esc(m.placard)}</strong>'
    if m.status != "active":
        line += f' <span class="status">{esc(labels.status_label(m.status))}</span>'
    line += badge
    hit = hits.get(pk)
    if hit:
        line += f' <span class="how" title="{words["how"]}">{esc(hit.label)} · {hit.score:.3f}</span>'
    if scope.both:  # shown once per run by the palace-head row; said on every row to a screen reader
        line += f' <span class="sr-only">{esc(_palace_name(m.palace_id, scope, words["mine"]))}</span>'
    action = ""
    if writable and m.status in ("active", "forgotten", "archived"):
        name, word = ("memory-forget", "forget") if m.status == "active" else ("memory-restore", "restore")
        url = url_for(pk, name)
        action = (
            f'<form method="post" action="{url}" hx-post="{url}" hx-target="#detail-{pk}" hx-swap="innerHTML">'
            f'{csrf}<button type="submit">{words[word]}</button></form>'
        )
    return (
        f'<li class="mrow k-{kind} st-{status}" id="m-{pk}">\n  {pick}\n'
        f'  <a class="coord" href="{detail_url}" title="{words["place"]}">{esc(coordinate(m) or "—")}</a>\n'
        f'  <div class="body">\n    <div class="line1">{line}</div>\n'
        f'    <p class="text">{esc(clip(m.content, TEXT_CHARS))}</p>\n  </div>\n'
        f'  <div class="actions">\n'
        f'    <a href="{detail_url}" hx-get="{detail_url}" hx-target="#detail-{pk}" hx-swap="innerHTML">'
        f"{words['open']}</a>\n    {action}\n  </div>\n"
        f'  <div class="inline-detail" id="detail-{pk}" aria-live="polite"></div>\n</li>\n'
    )


def log_rows(rows: Iterable[Any], *, scope: Any, fresh: bool = False) -> SafeString:
    mine = _("my palace")
    return mark_safe("".join(_log_row(row, scope, mine, fresh) for row in rows))  # noqa: S308 - escaped


def _actor(row: Any) -> str:
    if row.actor_kind == "system":
        return _("by the %(job)s job") % {"job": row.actor_name}
    if row.actor_kind == "token":
        return _("by %(who)s via token “%(label)s”") % {"who": row.actor_name, "label": row.actor_token_label}
    return _("by %(who)s") % {"who": row.actor_name}


def _log_row(row: Any, scope: Any, mine: str, fresh: bool) -> str:
    raw_category = op_category(row.op)
    category = esc(raw_category)
    moment = timezone.localtime(row.created_at)
    target = ""
    if row.target_kind == "memory" and row.target_id:
        target_id = int(row.target_id)
        target = f' <a href="{url_for(target_id, "memory")}">#{target_id}</a>'
    who = _actor(row)
    if scope.both:
        who = f"{who} · {_palace_name(row.palace_id, scope, mine)}"
    detail = ""
    if row.reason or row.detail:
        reason = f"<span>{esc(row.reason)}</span>" if row.reason else ""
        pairs = "".join(
            f"<span{f' title="{esc(raw)}"' if raw else ''}><em>{esc(k)}</em> {esc(v)}</span>"
            for k, v, raw in labels.detail_pairs(row.detail)
        )
        detail = f'\n    <div class="detail">{reason}{pairs}</div>'
    title = esc(labels.CATEGORIES.get(raw_category, raw_category))
    return (
        f'<li class="row logrow{" fresh" if fresh else ""}" id="op-{int(row.pk)}" data-category="{category}">\n'
        f'  <i class="dot cat-{category}" title="{title}"></i>\n'
        f'  <time datetime="{moment.isoformat()}">{moment.strftime("%m-%d %H:%M")}</time>\n'
        f'  <div class="body">\n    <strong>{esc(labels.op_label(row.op))}</strong>{target}\n'
        f'    <span class="muted">{esc(who)}</span>{detail}\n  </div>\n</li>'
    )


def corridor_svg(panel: Any) -> SafeString:
    """One palace panel of the corridor graph (the <g> groups inside its <svg>): corridors as paths coloured by kind,
    rooms as links to their detail (sized by active memories, named when the panel is not crowded)."""
    words = {kind: esc(labels.link_label(kind)) for kind in ("supersede", "contradiction", "next", "related", "entity")}
    names = {node.id: esc(labels.room_label(node.name)) for node in panel.nodes}
    links = "".join(
        f'<path class="link e-{esc(link.kind)}" data-a="{int(link.a)}" data-b="{int(link.b)}" d="{esc(link.path)}"'
        f' stroke-width="{1.5 + min(int(link.n), 6) * 0.6:.1f}"><title>{names[link.a]}'
        f"{'' if link.a == link.b else ' ↔ ' + names[link.b]}: {words.get(link.kind, esc(link.kind))} × {int(link.n)}"
        "</title></path>"
        for link in panel.links
    )
    nodes = []
    for node in panel.nodes:
        url = url_for(node.id, "corridor-room")
        label, x, y, r = names[node.id], float(node.x), float(node.y), float(node.r)
        count = int(node.memories)
        text = (
            f'<text x="{float(node.label_x)}" y="{float(node.label_y)}" text-anchor="{esc(node.anchor)}">{label}'
            f' <tspan class="count">{count}</tspan></text>'
            if panel.labelled
            else ""
        )
        nodes.append(
            f'<a href="{url}" hx-get="{url}" hx-target="#room-panel" hx-swap="innerHTML" data-id="{int(node.id)}"'
            f' class="node k-{esc(node.kind)}" aria-label="{label} ({count})"><circle cx="{x}" cy="{y}" r="{r}">'
            f"</circle>{text}<title>{label} · {count}</title></a>"
        )
    return mark_safe(f'<g class="links">{links}</g>\n          <g class="nodes">{"".join(nodes)}</g>')  # noqa: S308


@functools.cache
def _plain_url(name: str) -> str:
    return reverse(name)


def room_rows(rooms: Iterable[Any]) -> SafeString:
    """Room directory rows (Today's newest rooms of each kind, a page of the whole directory): name linking to the
    Palace list filtered to the room, slots used of capacity, the newest placard."""
    palace = _plain_url("palace")
    return mark_safe(  # noqa: S308
        "".join(
            f'<li class="row room k-{esc(r.kind)}"><i class="dot"></i><a href="{palace}?room={int(r.id)}">'
            f"{esc(labels.room_label(r.name))}</a> "
            f'<span class="muted">{int(r.slots_used)}/{int(r.capacity)}</span> '
            f'<span class="placard">{esc(r.latest_placard)}</span></li>'
            for r in rooms
        )
    )


def week_bars(week: Any) -> SafeString:
    """The bars of the last-7-days chart (the <rect>s inside its <svg>), one a day, empty days one pixel high."""
    return mark_safe(  # noqa: S308
        "".join(
            f'<rect x="{int(b.x)}" y="{int(b.y)}" width="12" height="{int(b.height) or 1}" rx="2"'
            f' class="{"" if b.count else "empty"}"><title>{b.day:%m-%d}: {int(b.count)}</title></rect>'
            for b in week.days
        )
    )
