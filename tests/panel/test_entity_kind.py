"""Changing an entity's kind in the panel (issue 26): a writer's form POST changes it with an op row; a refusal
renders inside the kind form, in the page's language; a viewer sees no form and is refused by the server (with the
owner as the positive control); the same kind again writes nothing."""

from __future__ import annotations

import re
from typing import Any

from memory.models import Entity
from palace.models import OpLog, Palace
from tests.entity_rows import make_entity


def test_a_writer_changes_the_kind_with_an_op_row(alice: Any, client_for: Any, project: Palace) -> None:
    marco = make_entity(project, "Marco Rossi", kind="other")  # the rules' "other"
    client = client_for(alice)
    page = client.get(f"/entities/{marco.pk}/").content.decode()
    form = re.search(r'<form[^>]*id="kind-form".*?</form>', page, re.S)
    assert form is not None and 'name="kind"' in form.group(0)
    assert '<option value="other" selected>' in form.group(0) and '<option value="person">' in form.group(0)

    r = client.post(f"/entities/{marco.pk}/kind/", {"kind": "person"})
    assert r.status_code == 302 and r["Location"] == f"/entities/{marco.pk}/"
    assert Entity.objects.get(pk=marco.pk).kind == "person"
    op = OpLog.objects.get(op="entity.kind")
    assert (op.target_id, op.detail, op.actor_user_id) == (marco.pk, {"from": "other", "to": "person"}, alice.pk)
    assert client.post(f"/entities/{marco.pk}/kind/", {"kind": "person"}).status_code == 302  # the same again
    assert OpLog.objects.filter(op="entity.kind").count() == 1
    client.post("/scope/", {"mode": "project", "project": project.pk})
    log = client.get("/log/").content.decode()
    assert "Changed an entity&#x27;s kind" in log or "Changed an entity's kind" in log


def test_a_bad_kind_is_refused_inside_the_form_in_the_pages_language(
    alice: Any, client_for: Any, project: Palace
) -> None:
    pg = make_entity(project, "PostgreSQL", kind="tool")
    client = client_for(alice)
    for lang, message in (("en", "Choose one of the kinds."), ("zh-CN", "请选择一种类型。")):
        r = client.post(f"/entities/{pg.pk}/kind/", {"kind": "wizard"}, HTTP_ACCEPT_LANGUAGE=lang)
        assert r.status_code == 422
        form = re.search(r'<form[^>]*id="kind-form".*?</form>', r.content.decode(), re.S)
        assert form is not None and message in form.group(0), lang
    assert Entity.objects.get(pk=pg.pk).kind == "tool" and not OpLog.objects.filter(op="entity.kind").exists()


def test_a_viewer_sees_no_kind_form_and_is_refused(alice: Any, bob: Any, client_for: Any, project: Palace) -> None:
    carol = make_entity(project, "Carol Smith", kind="other")
    viewer = client_for(bob)
    assert 'id="kind-form"' not in viewer.get(f"/entities/{carol.pk}/").content.decode()
    assert viewer.post(f"/entities/{carol.pk}/kind/", {"kind": "person"}).status_code == 403
    assert Entity.objects.get(pk=carol.pk).kind == "other" and not OpLog.objects.filter(op="entity.kind").exists()
    owner = client_for(alice)  # positive control
    assert 'id="kind-form"' in owner.get(f"/entities/{carol.pk}/").content.decode()
    assert owner.post(f"/entities/{carol.pk}/kind/", {"kind": "person"}).status_code == 302
    assert Entity.objects.get(pk=carol.pk).kind == "person"
