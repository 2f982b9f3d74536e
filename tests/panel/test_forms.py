"""Refused panel forms answer with their page (or htmx region) and the refusal inside the form, never a bare line:
forget without a reason, a contradiction decided from a memory's page without a reason, a merge with no entity."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import Edge, Entity
from palace.models import Palace
from tests.entity_rows import make_entity
from tests.fakes.judging import contradiction

pytestmark = pytest.mark.django_db


def test_forget_without_a_reason_is_refused_in_the_form(alice: Any, client_for: Any, make_memory: Any) -> None:
    memory = make_memory(Palace.objects.get(personal_owner=alice))
    client = client_for(alice)
    url = f"/palace/m/{memory.pk}/forget/"
    refused = client.post(url, {"reason": "  "}, HTTP_HX_REQUEST="true")
    body = refused.content.decode()
    assert refused.status_code == 422 and "<html" not in body  # htmx: the detail region only
    assert 'class="forget"' in body and "Say why this memory should be forgotten" in body
    memory.refresh_from_db()
    assert memory.status == "active"
    assert client.post(url, {"reason": "outdated"}).status_code == 302  # the positive control
    memory.refresh_from_db()
    assert (memory.status, memory.epitaph) == ("forgotten", "outdated")


def test_a_refused_decision_on_a_memory_page_shows_that_page_in_chinese(alice: Any, client_for: Any) -> None:
    made = contradiction(Palace.objects.get(personal_owner=alice), alice)
    client = client_for(alice)
    response = client.post(
        f"/palace/e/{made.edge.pk}/resolve/",
        {"decision": "both_stand", "reason": "", "back": str(made.newer.pk)},
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )
    body = response.content.decode()
    assert response.status_code == 422 and "mainnav" in body and f'id="memory-{made.newer.pk}"' in body
    assert f'id="resolve-error-{made.edge.pk}"' in body and "“两者都成立”需要理由" in body
    assert Edge.objects.get(pk=made.edge.pk).status == "pending"


def test_entity_merge_without_a_choice_is_refused_in_the_merge_form(alice: Any, client_for: Any) -> None:
    personal = Palace.objects.get(personal_owner=alice)
    ack, dana = make_entity(personal, "ACK", kind="other"), make_entity(personal, "Dana")
    client = client_for(alice)
    page = client.get(f"/entities/{dana.pk}/").content.decode()
    assert '<option value="" selected>' in page  # nothing chosen for you
    refused = client.post(f"/entities/{dana.pk}/merge/", {"into": ""})
    body = refused.content.decode()
    assert refused.status_code == 422 and 'id="merge-error"' in body
    assert body.index('id="merge-error"') > body.index('id="merge-form"')
    assert not Entity.objects.filter(merged_into__isnull=False).exists()
    assert client.post(f"/entities/{dana.pk}/merge/", {"into": ack.pk}).status_code == 302  # positive control
    assert Entity.objects.get(pk=dana.pk).merged_into_id == ack.pk
