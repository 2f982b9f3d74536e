"""The markup of the panel's long lists (memory rows, op-log rows, the corridor graph), written with format_html.

A page of 50 memory rows through the template engine took about 100 ms of a list view's render on the reference
machine (some 35 nodes a row, every integer and lazy label localised one by one); the same markup from these
functions takes a few milliseconds. Everything here is escaped by format_html; the translated words are looked
up once per list, not once per row.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from django.middleware.csrf import get_token
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

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


def coordinate(memory: Any) -> str:
    slot = memory.slot
    return f"{labels.room_label(slot.room.name)}#{slot.number}" if slot is not None else ""


def _csrf_input(request: Any) -> SafeString:
    return format_html('<input type="hidden" name="csrfmiddlewaretoken" value="{}">', get_token(request))


def _palace_name(palace_id: int, scope: Any, mine: str) -> str:
    return mine if scope.personal is not None and palace_id == scope.personal.pk else scope.project.origin_key


def memory_rows(memories: Iterable[Any], *, scope: Any, hits: Mapping[int, Any], request: Any) -> SafeString:
    words = {
        "select": _("Select memory"),
        "place": _("Place in the palace"),
        "how": _("How it was found"),
        "mine": _("my palace"),
        "open": _("Open"),
        "forget": _("Forget"),
        "restore": _("Restore"),
    }
    csrf = _csrf_input(request)
    return mark_safe("".join(_memory_row(m, scope, hits, words, csrf) for m in memories))  # noqa: S308 - escaped parts


def _memory_row(m: Any, scope: Any, hits: Mapping[int, Any], words: dict[str, str], csrf: SafeString) -> str:
    pk = int(m.pk)
    detail_url = url_for(pk, "memory")
    writable = m.palace_id in scope.writable_ids
    pick = (
        format_html(
            '<input class="pick" type="checkbox" name="ids" value="{}" form="batch" aria-label="{} {}">',
            pk,
            words["select"],
            pk,
        )
        if writable
        else mark_safe('<span class="pick"></span>')
    )
    line = [format_html('<span class="tag">{}</span>', labels.kind_label(m.kind))]
    if m.placard:
        line.append(format_html(' <strong class="placard">{}</strong>', m.placard))
    if m.status != "active":
        line.append(format_html(' <span class="status">{}</span>', labels.status_label(m.status)))
    hit = hits.get(pk)
    if hit:
        score = f"{hit.score:.3f}"
        line.append(format_html(' <span class="how" title="{}">{} · {}</span>', words["how"], hit.label, score))
    if scope.both:
        line.append(format_html(' <span class="muted">{}</span>', _palace_name(m.palace_id, scope, words["mine"])))
    action = ""
    if writable and m.status in ("active", "forgotten", "archived"):
        name, word = ("memory-forget", "forget") if m.status == "active" else ("memory-restore", "restore")
        url = url_for(pk, name)
        action = format_html(
            '<form method="post" action="{}" hx-post="{}" hx-target="#detail-{}" hx-swap="innerHTML">{}'
            '<button type="submit">{}</button></form>',
            url,
            url,
            pk,
            csrf,
            words[word],
        )
    return format_html(
        '<li class="mrow k-{} st-{}" id="m-{}">\n  {}\n'
        '  <a class="coord" href="{}" title="{}">{}</a>\n'
        '  <div class="body">\n    <div class="line1">{}</div>\n    <p class="text">{}</p>\n  </div>\n'
        '  <div class="actions">\n'
        '    <a href="{}" hx-get="{}" hx-target="#detail-{}" hx-swap="innerHTML">{}</a>\n    {}\n  </div>\n'
        '  <div class="inline-detail" id="detail-{}" aria-live="polite"></div>\n</li>\n',
        m.kind,
        m.status,
        pk,
        pick,
        detail_url,
        words["place"],
        coordinate(m) or "—",
        mark_safe("".join(line)),  # noqa: S308 - each part escaped above
        clip(m.content, TEXT_CHARS),
        detail_url,
        detail_url,
        pk,
        words["open"],
        action,
        pk,
    )


def log_rows(rows: Iterable[Any], *, scope: Any, fresh: bool = False) -> SafeString:
    mine = _("my palace")
    return mark_safe("".join(_log_row(row, scope, mine, fresh) for row in rows))  # noqa: S308 - escaped parts


def _actor(row: Any) -> str:
    if row.actor_kind == "system":
        return _("by the %(job)s job") % {"job": row.actor_name}
    if row.actor_kind == "token":
        return _("by %(who)s via token “%(label)s”") % {"who": row.actor_name, "label": row.actor_token_label}
    return _("by %(who)s") % {"who": row.actor_name}


def _log_row(row: Any, scope: Any, mine: str, fresh: bool) -> str:
    category = labels.op_category(row.op)
    moment = timezone.localtime(row.created_at)
    target = ""
    if row.target_kind == "memory" and row.target_id:
        target = format_html(' <a href="{}">#{}</a>', url_for(row.target_id, "memory"), int(row.target_id))
    who = _actor(row)
    if scope.both:
        who = f"{who} · {_palace_name(row.palace_id, scope, mine)}"
    detail = ""
    if row.reason or row.detail:
        reason = format_html("<span>{}</span>", row.reason) if row.reason else ""
        pairs = format_html_join("", "<span><em>{}</em> {}</span>", labels.detail_pairs(row.detail))
        detail = format_html('\n    <div class="detail">{}{}</div>', reason, pairs)
    return format_html(
        '<li class="row logrow{}" id="op-{}" data-category="{}">\n'
        '  <i class="dot cat-{}" title="{}"></i>\n'
        '  <time datetime="{}">{}</time>\n'
        '  <div class="body">\n    <strong>{}</strong>{}\n    <span class="muted">{}</span>{}\n  </div>\n</li>',
        " fresh" if fresh else "",
        int(row.pk),
        category,
        category,
        labels.CATEGORIES.get(category, category),
        moment.isoformat(),
        moment.strftime("%m-%d %H:%M"),
        labels.op_label(row.op),
        target,
        who,
        detail,
    )


def corridor_svg(graph: Any) -> SafeString:
    """The graph's links and nodes (the <g> groups inside the corridor's <svg>)."""
    links = format_html_join(
        "",
        '<line data-a="{}" data-b="{}" x1="{}" y1="{}" x2="{}" y2="{}" stroke-width="{}"><title>{}</title></line>',
        (
            (link.a, link.b, link.x1, link.y1, link.x2, link.y2, 3 if link.n > 4 else 2 if link.n > 1 else 1, link.n)
            for link in graph.links
        ),
    )
    named = len(graph.nodes) <= 60
    nodes = []
    for node in graph.nodes:
        url = url_for(node.id, "corridor-room")
        label = labels.room_label(node.name)
        text = (
            format_html(
                '<text x="{}" y="{}" text-anchor="middle">{}</text>', node.x, round(node.y + node.r + 11, 1), label
            )
            if named
            else ""
        )
        nodes.append(
            format_html(
                '<a href="{}" hx-get="{}" hx-target="#room-panel" hx-swap="innerHTML" data-id="{}" class="node k-{}"'
                ' aria-label="{}"><circle cx="{}" cy="{}" r="{}"></circle>{}<title>{} · {}</title></a>',
                url,
                url,
                node.id,
                node.kind,
                label,
                node.x,
                node.y,
                node.r,
                text,
                label,
                node.slots,
            )
        )
    return format_html(
        '<g class="links">{}</g>\n          <g class="nodes">{}</g>',
        links,
        mark_safe("".join(nodes)),  # noqa: S308 - each node escaped above
    )
