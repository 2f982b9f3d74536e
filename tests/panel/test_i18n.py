"""Every string on every page has a Simplified Chinese translation, the compiled catalogue matches the .po, and
the language follows Accept-Language until the user picks one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import translation
from django.utils.translation.template import templatize

PO = Path(settings.BASE_DIR) / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
TEMPLATES = Path(settings.BASE_DIR) / "templates"
STRING = r'u?(?:"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')'
CALL = re.compile(rf"\b(n?p?gettext)\(\s*({STRING}(?:\s*,\s*{STRING})*)")


def parse_po(path: Path) -> list[dict[str, object]]:
    """Entries of a .po file: msgid, msgid_plural, msgstr list, flags."""
    entries: list[dict[str, object]] = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        entry: dict[str, object] = {"flags": [], "msgstr": []}
        key = None
        for line in block.splitlines():
            if line.startswith("#,"):
                entry["flags"] = [f.strip() for f in line[2:].split(",")]
            elif line.startswith("#"):
                continue
            elif line.startswith('"') and key:
                value = ast.literal_eval(line)
                if key == "msgstr":
                    entry["msgstr"][-1] += value  # type: ignore[index]
                else:
                    entry[key] = entry[key] + value  # type: ignore[operator]
            elif line.strip():
                head, _, rest = line.partition(" ")
                value = ast.literal_eval(rest)
                if head.startswith("msgstr"):
                    key = "msgstr"
                    entry["msgstr"].append(value)  # type: ignore[attr-defined]
                else:
                    key = head
                    entry[head] = value
        if "msgid" in entry:
            entries.append(entry)
    return entries


def template_msgids() -> set[str]:
    """Every msgid the templates ask for ({% translate %} and {% blocktranslate %}, incl. plural forms)."""
    found: set[str] = set()
    for path in TEMPLATES.rglob("*.html"):
        code = templatize(path.read_text(encoding="utf-8"), origin=str(path))
        for name, args in CALL.findall(code):
            strings = [ast.literal_eval(s) for s in re.findall(STRING, args)]
            if name.startswith("p"):
                strings = strings[1:]  # drop the context
            found.update(strings[:2] if name.startswith(("n", "pn", "np")) else strings[:1])
    return found


@pytest.fixture(scope="module")
def entries() -> list[dict[str, object]]:
    return [e for e in parse_po(PO) if e["msgid"]]


def test_po_has_no_empty_or_fuzzy_translation(entries):
    assert len(entries) > 100
    empty = [e["msgid"] for e in entries if not all(e["msgstr"])]  # type: ignore[arg-type]
    fuzzy = [e["msgid"] for e in entries if "fuzzy" in e["flags"]]  # type: ignore[operator]
    assert empty == []
    assert fuzzy == []


def test_every_template_string_has_a_chinese_translation(entries):
    translated = {e["msgid"] for e in entries} | {e.get("msgid_plural") for e in entries}
    wanted = template_msgids()
    assert "Today" in wanted and "%(n)s day overdue" in wanted  # the extractor really reads the templates
    assert sorted(wanted - translated) == []


def test_compiled_catalogue_matches_the_po(entries):
    with translation.override("zh-hans"):
        for e in entries:
            if e.get("msgid_plural"):
                got = translation.ngettext(e["msgid"], e["msgid_plural"], 1)  # type: ignore[arg-type]
            else:
                got = translation.gettext(e["msgid"])  # type: ignore[arg-type]
            assert got == e["msgstr"][0], f"stale .mo for {e['msgid']!r}: run compilemessages"  # type: ignore[index]


@pytest.mark.parametrize("url", ["/today/", "/palace/", "/corridor/", "/log/", "/episodes/"])
def test_language_follows_accept_language_until_chosen(url, alice, client_for):
    client = client_for(alice)
    chinese = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9")
    assert '<html lang="zh-hans">' in chinese.content.decode()
    assert "我的宫殿" in chinese.content.decode()
    english = client.get(url, HTTP_ACCEPT_LANGUAGE="en-US")
    assert '<html lang="en">' in english.content.decode()
    client.post("/i18n/setlang/", {"language": "zh-hans", "next": url})
    chosen = client.get(url, HTTP_ACCEPT_LANGUAGE="en-US")
    assert '<html lang="zh-hans">' in chosen.content.decode()


def test_stored_values_stay_english_and_are_translated_for_display(alice, client_for, make_memory, personal):
    memory = make_memory(personal, "Tea, not coffee", kind="preference", placard="tea")
    page = client_for(alice).get("/palace/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "偏好阁#1" in page and "偏好" in page
    memory.refresh_from_db()
    assert memory.kind == "preference"
    assert memory.slot.room.name == "Preference Pavilion"
