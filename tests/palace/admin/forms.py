"""Submitting an admin page's form the way a browser would: every field as rendered, then the test's edits."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any


class _FormFields(HTMLParser):
    """The successful controls of the form with id `form_id` (inputs, selects, textareas; disabled ones skipped)."""

    def __init__(self, form_id: str) -> None:
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.inside = False
        self.pairs: list[tuple[str, str]] = []
        self._select: tuple[str, bool] | None = None  # name, multiple
        self._options: list[tuple[str, bool]] = []
        self._option_value: str | None = None
        self._option_selected = False
        self._option_text = ""
        self._textarea: str | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v if v is not None else "") for k, v in attrs}
        if tag == "form":
            self.inside = self.inside or a.get("id") == self.form_id
            return
        if not self.inside or "disabled" in a:
            return
        name = a.get("name", "")
        if tag == "input" and name:
            kind = a.get("type", "text").lower()
            if kind in ("checkbox", "radio"):
                if "checked" in a:
                    self.pairs.append((name, a.get("value", "on")))
            elif kind not in ("submit", "button", "image", "file", "reset"):
                self.pairs.append((name, a.get("value", "")))
        elif tag == "select" and name:
            self._select, self._options = (name, "multiple" in a), []
        elif tag == "option" and self._select is not None:
            self._option_value, self._option_selected, self._option_text = a.get("value"), "selected" in a, ""
        elif tag == "textarea" and name:
            self._textarea, self._text = name, ""

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._text += data
        if self._select is not None and self._option_value is None:
            self._option_text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self.inside:
            self.inside = False
        elif tag == "option" and self._select is not None:
            value = self._option_value if self._option_value is not None else self._option_text.strip()
            self._options.append((value, self._option_selected))
            self._option_value = None
        elif tag == "select" and self._select is not None:
            name, multiple = self._select
            chosen = [v for v, selected in self._options if selected]
            if not chosen and not multiple and self._options:
                chosen = [self._options[0][0]]  # a browser submits the first option of a single select
            self.pairs.extend((name, v) for v in chosen)
            self._select = None
        elif tag == "textarea" and self._textarea is not None:
            self.pairs.append((self._textarea, self._text.removeprefix("\n")))
            self._textarea = None


def form_data(html: str, form_id: str, edits: dict[str, Any] | None = None) -> dict[str, Any]:
    """The form's data as a browser submits it, with `edits` applied (None removes a field, e.g. unticks a box)."""
    parser = _FormFields(form_id)
    parser.feed(html)
    data: dict[str, Any] = {}
    for name, value in parser.pairs:
        if name in data:
            data[name] = [*data[name], value] if isinstance(data[name], list) else [data[name], value]
        else:
            data[name] = value
    for name, value in (edits or {}).items():
        if value is None:
            data.pop(name, None)
        else:
            data[name] = value
    data.pop("csrfmiddlewaretoken", None)
    return data
