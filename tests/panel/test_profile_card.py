"""Today's curated-profile card: the personal palace's always, the project's when the scope has one; writers edit
(with the version the form was loaded at), a stale form shows the conflict and keeps the typed text, rollback
appends, the diff is escaped; viewers read, outsiders get 404 (each beside its positive control)."""

from __future__ import annotations

from typing import Any

from memory.context import curated_edit
from memory.models import ProfileVersion
from palace.actors import Actor
from palace.models import OpLog

HX = {"HTTP_HX_REQUEST": "true"}


def test_today_lists_the_cards_of_the_palaces_in_scope(
    alice: Any, client_for: Any, personal: Any, project: Any
) -> None:
    client = client_for(alice)
    html = client.get("/today/").content.decode()
    assert f"/today/profile/{personal.pk}/" in html and f"/today/profile/{project.pk}/" not in html
    client.post("/scope/", {"mode": "both", "project": project.pk, "next": "/today/"})
    html = client.get("/today/").content.decode()
    assert f"/today/profile/{personal.pk}/" in html and f"/today/profile/{project.pk}/" in html


def test_edit_conflict_rollback_and_diff(alice: Any, client_for: Any, personal: Any) -> None:
    client = client_for(alice)
    url = f"/today/profile/{personal.pk}/"
    card = client.get(url, **HX).content.decode()
    assert "No curated profile yet." in card and 'name="expected_version" value="0"' in card

    saved = client.post(url + "edit/", {"content": "I like <b>tea</b>.", "expected_version": "0"}, **HX)
    assert saved.status_code == 200 and "Saved as version 1." in saved.content.decode()
    assert client.post(url + "edit/", {"content": "I like coffee.", "expected_version": "1"}, **HX).status_code == 200

    stale = client.post(url + "edit/", {"content": "My stale draft.", "expected_version": "1"}, **HX)
    page = stale.content.decode()
    assert stale.status_code == 409 and "Someone saved version 2 while you edited version 1" in page
    assert "My stale draft.</textarea>" in page and 'name="expected_version" value="2"' in page

    diff = client.get(url + "?diff=2", **HX).content.decode()
    assert "Changes from version 1 to 2" in diff
    assert '<span class="d-del">-I like &lt;b&gt;tea&lt;/b&gt;.</span>' in diff  # escaped, never markup
    assert '<span class="d-add">+I like coffee.</span>' in diff

    back = client.post(url + "rollback/", {"version": "1", "expected_version": "2"}, **HX)
    assert back.status_code == 200 and "version 3 copies version 1" in back.content.decode()
    assert [v.content for v in ProfileVersion.objects.filter(palace=personal).order_by("version")] == [
        "I like <b>tea</b>.",
        "I like coffee.",
        "I like <b>tea</b>.",
    ]
    assert OpLog.objects.filter(op="profile.rollback", palace=personal).count() == 1
    assert client.post(url + "rollback/", {"version": "1", "expected_version": "2"}, **HX).status_code == 409
    # Without htmx, a write redirects to Today.
    plain = client.post(url + "edit/", {"content": "Plain form post.", "expected_version": "3"})
    assert plain.status_code == 302 and plain["Location"].endswith("/today/")


def test_project_card_writers_edit_viewers_read_outsiders_404(
    alice: Any, bob: Any, charlie: Any, client_for: Any, project: Any
) -> None:
    curated_edit(palace=project, actor=Actor.for_user(alice), content="Demo ships weekly.", expected_version=0)
    url = f"/today/profile/{project.pk}/"
    owner = client_for(alice).get(url, **HX).content.decode()
    assert "Demo ships weekly." in owner and 'class="profile-edit"' in owner
    viewer = client_for(bob).get(url, **HX).content.decode()
    assert "Demo ships weekly." in viewer and 'class="profile-edit"' not in viewer and "its writers edit it" in viewer
    refused = client_for(bob).post(url + "edit/", {"content": "Bob's text.", "expected_version": "1"}, **HX)
    assert refused.status_code == 403
    assert client_for(charlie).get(url, **HX).status_code == 404
    assert client_for(charlie).post(url + "edit/", {"content": "x", "expected_version": "1"}, **HX).status_code == 404
    assert ProfileVersion.objects.filter(palace=project).count() == 1


def test_the_card_is_translated(alice: Any, client_for: Any, personal: Any) -> None:
    client = client_for(alice)
    html = client.get(f"/today/profile/{personal.pk}/", HTTP_ACCEPT_LANGUAGE="zh-hans", **HX).content.decode()
    assert "你的自定义画像" in html and "Your curated profile" not in html
