"""The Palace view's export links: they name the project in view (or nothing: everything readable) and download
what the viewer may read."""

from __future__ import annotations

import html
import json
import re
from typing import Any

from palace.models import Palace
from panel.scope import SESSION_MODE, SESSION_PROJECT
from tests.ops.portability.world import build_world


def _links(page: str) -> list[str]:
    nav = re.search(r'<nav class="exports".*?</nav>', page, re.S)
    assert nav is not None
    return [html.unescape(h) for h in re.findall(r'href="([^"]+)"', nav.group(0))]


def test_export_links_follow_the_scope_and_download_only_readable_memories(
    project: Palace, alice: Any, charlie: Any, client_for: Any
) -> None:
    build_world(alice, project)
    owner = client_for(alice)
    session = owner.session
    session[SESSION_MODE], session[SESSION_PROJECT] = "project", project.pk
    session.save()
    links = _links(owner.get("/palace/").content.decode())
    assert len(links) == 3 and all("project=github.com%2Fatrium-test%2Fdemo" in h for h in links)
    assert any("format=markdown" in h for h in links) and any("redacted=true" in h for h in links)
    (section,) = json.loads(owner.get(links[0]).getvalue())["palaces"]
    assert section["origin"] == project.origin_key and len(section["memories"]) == 4  # the positive control
    outsider = client_for(charlie)
    (own,) = [h for h in _links(outsider.get("/palace/").content.decode()) if "format=json" in h][:1]
    assert "project=" not in own
    document = json.loads(outsider.get(own).getvalue())
    assert [p["owner"] for p in document["palaces"]] == ["charlie"]
    assert outsider.get(links[0]).status_code == 404  # alice's project link, followed by charlie


def test_panel_export_links_carry_no_credential_and_need_the_session(
    project: Palace, alice: Any, client_for: Any
) -> None:
    """Issue 24, item 7: the panel's links are not bearer URLs: they name no token, so they download only in the
    session that shows them (the owner's session, the control) and nowhere else."""
    from django.test import Client

    build_world(alice, project)
    owner = client_for(alice)
    links = _links(owner.get("/palace/").content.decode())
    assert links and not any("token" in h for h in links)
    assert all(owner.get(h).status_code == 200 for h in links)
    assert all(Client().get(h).status_code == 401 for h in links)
