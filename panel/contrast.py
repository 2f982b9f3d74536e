"""The Judge page's reading aids for one open contradiction: the two texts with the words that differ marked
(difflib over word tokens), and the ruling said in words a person reads ("the rules found the same sentence with
“200” instead of “120”") built from the ruling's fields and that difference, never by re-parsing its reason text.

Every piece of user text goes through format_html / format_html_join (escaped): a memory holding "<script>" shows
as text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

# One CJK ideograph is a word of its own (Chinese has no spaces); otherwise a run of word characters, a run of
# spaces, or one other character. Joining the tokens gives the text back exactly.
TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[^\W\u3400-\u9fff\uf900-\ufaff]+|\s+|[^\w\s]", re.UNICODE)
CHANGES_SAID = 3  # at most this many changes in the readable why; the marks show every one

# Why the rules ruled instead of the model (memory.judge FALLBACK_REASONS), said in words.
FALLBACK_WORDS = {
    "off": lambda: _("the model judge is switched off"),
    "no_key": lambda: _("the model judge has no API key"),
    "no_endpoint": lambda: _("the model judge has no endpoint"),
    "key_unreadable": lambda: _("the stored API key could not be read"),
    "timeout": lambda: _("the model did not answer in time"),
    "failed": lambda: _("the model call failed"),
    "skipped": lambda: _("the model was not asked"),
    "bulk": lambda: _("a bulk save is judged by the rules alone"),
}


@dataclass(frozen=True)
class Contrast:
    older: SafeString  # the older text, words only it has marked (mark.del)
    newer: SafeString  # the newer text, words only it has marked (mark.ins)
    changes: tuple[tuple[str, str], ...]  # (older words, newer words) per differing run; "" on the side without


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def contrast(older: str, newer: str) -> Contrast:
    """Both texts, each token run that differs marked; the runs of spaces count as tokens so the marks stay tight."""
    a, b = tokens(older), tokens(newer)
    old_parts: list[tuple[str, str]] = []
    new_parts: list[tuple[str, str]] = []
    changes: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        left, right = "".join(a[i1:i2]), "".join(b[j1:j2])
        if op == "equal":
            old_parts.append(("plain", left))
            new_parts.append(("plain", right))
            continue
        if left.strip():
            old_parts.append(("del", left))
        if right.strip():
            new_parts.append(("ins", right))
        if left.strip() or right.strip():
            changes.append((left.strip(), right.strip()))
    return Contrast(older=_marked(old_parts), newer=_marked(new_parts), changes=tuple(changes))


def _marked(parts: list[tuple[str, str]]) -> SafeString:
    return format_html_join(
        "",
        "{}",
        (
            (format_html('<mark class="diff {}">{}</mark>', tag, text) if tag != "plain" else text,)
            for tag, text in parts
        ),
    )


def _change_words(old: str, new: str) -> str:
    if old and new:
        return _("“%(new)s” instead of “%(old)s”") % {"new": new, "old": old}
    if new:
        return _("“%(new)s” added") % {"new": new}
    return _("“%(old)s” left out") % {"old": old}


def readable_why(ruling: Any, changes: tuple[tuple[str, str], ...]) -> str:
    """The ruling in a sentence or two, in the display language (plain text: the template escapes it)."""
    if ruling is None:
        return _("No ruling was kept for this pair; it was flagged as a contradiction.")
    said = "; ".join(_change_words(o, n) for o, n in changes[:CHANGES_SAID])
    if ruling.model_took_part:
        sure = _(
            "The model %(model)s judged that these contradict each other (%(pc)s sure; "
            "%(ps)s that they say the same thing)."
        ) % {
            "model": ruling.model_name or "?",
            "pc": _percent(ruling.p_contradiction),
            "ps": _percent(ruling.p_same),
        }
        return sure + (" " + _("What differs: %(changes)s.") % {"changes": said} if said else "")
    found = (
        _("The rules found nearly the same sentence (%(sim)s alike) with %(changes)s.")
        % {"sim": _percent(ruling.similarity), "changes": said}
        if said
        else _("The rules found nearly the same sentence (%(sim)s alike) worded differently.")
        % {"sim": _percent(ruling.similarity)}
    )
    why_rules = FALLBACK_WORDS.get(ruling.fallback_reason)
    if why_rules is None:
        return found
    return found + " " + _("The rules decided because %(why)s.") % {"why": why_rules()}


def _percent(p: float | None) -> str:
    return f"{round((p or 0) * 100)}%"


def raw_label(ruling: Any) -> str:
    """The stored label, as the recent rulings list and the API show it (kept beside the readable why)."""
    if ruling is None:
        return ""
    if ruling.model_took_part:
        return (
            f"model {ruling.model_name} ({ruling.p_same or 0:.2f} / {ruling.p_contradiction or 0:.2f}): {ruling.reason}"
        )
    return f"rules ({ruling.fallback_reason}): {ruling.reason}"
