"""A reveal is recorded as an access only when it is POSTed: a GET (a link, a prefetch, another site's image tag
riding the session cookie) writes nothing (issue 24, Low). Through the panel and REST."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.test import Client
from django.utils import timezone

from memory.models import AccessRecord, Memory
from palace.models import Palace
from tests.fakes.memories import make_memory

BODY = "The staging certificates renew on the first Monday."


def due_memory(palace: Palace) -> Memory:
    memory = make_memory(palace, BODY)
    Memory.objects.filter(pk=memory.pk).update(review_enrolled=True, created_at=timezone.now() - timedelta(days=2))
    return memory


def reveals(memory: Memory) -> int:
    return AccessRecord.objects.filter(memory=memory, via="review").count()


def test_the_panel_reveal_is_a_post_and_a_get_records_nothing(alice: Any, charlie: Any, client_for: Any) -> None:
    memory = due_memory(Palace.objects.get(personal_owner=alice))
    client: Client = client_for(alice)
    url = f"/review/{memory.pk}/reveal/"
    assert client_for(charlie).post(url).status_code == 404  # an outsider's POST: no such memory
    assert client.get(url).status_code == 405 and client.get(url, HTTP_HX_REQUEST="true").status_code == 405
    assert reveals(memory) == 0
    # positive control: the POST the Reveal button sends shows the body and records the access
    shown = client.post(url, HTTP_HX_REQUEST="true")
    assert shown.status_code == 200 and BODY in shown.content.decode()
    assert reveals(memory) == 1
    cue = client.get("/today/").content.decode()
    assert f'hx-post="{url}"' in cue and f'hx-get="{url}"' not in cue


def test_the_rest_reveal_records_on_post_and_not_on_get(alice: Any, token_for: Any) -> None:
    memory = due_memory(Palace.objects.get(personal_owner=alice))
    api = Client(headers={"Authorization": f"Bearer {token_for(alice, scope='read')}"})
    url = f"/api/v1/review/{memory.pk}/reveal"
    got = api.get(url)
    assert got.status_code == 200 and got.json()["content"] == BODY
    assert reveals(memory) == 0
    posted = api.post(url, content_type="application/json")
    assert posted.status_code == 200 and posted.json()["content"] == BODY
    record = AccessRecord.objects.get(memory=memory, via="review")
    assert record.user_id == alice.pk and record.token_id is not None
