"""The facts timeline fragment of the Entities view: GET /entities/<id>/facts/ with as_of / known_at, greyed
invalid facts, access (outsider 404, member reads), bad dates, and both languages."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest
import time_machine
from django.urls import reverse

from memory.knowledge import facts_write
from palace.actors import Actor
from palace.models import Palace

JAN = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)
MAR = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)


@pytest.fixture
def maria(project: Palace, alice: Any) -> dict[str, int]:
    """Maria, in the project: Lisbon (from 2025-06-01), replaced on 2026-03-01 by Porto (recorded in March), and an
    unrelated fact about her job."""
    actor = Actor.for_user(alice)
    with time_machine.travel(JAN, tick=False):
        first = facts_write(
            palace=project,
            actor=actor,
            facts=[
                {"entity": "Maria", "content": "lives in Lisbon", "valid_from": "2025-06-01"},
                {"entity": "Maria", "content": "works at Acme", "predicate": "job"},
            ],
        )
    lisbon = first.written[0].fact
    with time_machine.travel(MAR, tick=False):
        second = facts_write(
            palace=project,
            actor=actor,
            facts=[{"entity": "Maria", "content": "lives in Porto", "replaces": lisbon.pk, "valid_from": "2026-03-01"}],
        )
    return {"entity": lisbon.entity_id, "lisbon": lisbon.pk, "porto": second.written[0].fact.pk}


def states(html: str) -> dict[str, str]:
    """{fact id: state} of the rows, with 'grey' added for the greyed ones."""
    rows = re.findall(r'<tr class="fact( invalid muted)?" data-fact="(\d+)" data-state="(\w+)"', html)
    return {fact: state + (" grey" if grey else "") for grey, fact, state in rows}


def test_url_name_and_literal_path_agree(maria: dict[str, int]) -> None:
    assert reverse("entity-facts", args=[maria["entity"]]) == f"/entities/{maria['entity']}/facts/"


def test_timeline_greys_what_is_not_true_at_the_point(alice: Any, client_for: Any, maria: dict[str, int]) -> None:
    client = client_for(alice)
    url = f"/entities/{maria['entity']}/facts/"
    lisbon, porto = str(maria["lisbon"]), str(maria["porto"])

    now = client.get(url, HTTP_HX_REQUEST="true")
    feb = client.get(url, {"as_of": "2026-02-01"}, HTTP_HX_REQUEST="true").content.decode()
    known = client.get(url, {"known_at": "2026-02-01"}, HTTP_HX_REQUEST="true").content.decode()

    html = now.content.decode()
    assert now.status_code == 200 and "<html" not in html and html.lstrip().startswith("<section")  # the fragment
    assert states(html)[lisbon] == "replaced grey" and states(html)[porto] == "current"
    assert f"replaced by #{porto}" in html and "2025-06-01 → 2026-03-01" in html
    assert states(feb)[lisbon] == "current" and states(feb)[porto] == "not_yet_valid grey"
    assert "Facts true on 2026-02-01 (world time)." in feb
    # Record time: the replacement was recorded in March, so on 1 February only Lisbon and the job were known.
    assert porto not in states(known) and states(known)[lisbon] == "current"
    assert len(states(known)) == 2


def test_outsider_gets_404_and_a_member_gets_the_fragment(
    alice: Any, bob: Any, charlie: Any, client_for: Any, maria: dict[str, int]
) -> None:
    url = f"/entities/{maria['entity']}/facts/"

    outsider = client_for(charlie).get(url, HTTP_HX_REQUEST="true")
    viewer = client_for(bob).get(url, HTTP_HX_REQUEST="true")
    missing = client_for(alice).get("/entities/987654/facts/", HTTP_HX_REQUEST="true")

    assert outsider.status_code == 404 and b"Lisbon" not in outsider.content
    assert missing.status_code == 404
    assert viewer.status_code == 200 and b"lives in Lisbon" in viewer.content  # positive control: a viewer reads


def test_bad_date_is_a_422_that_says_how(alice: Any, client_for: Any, maria: dict[str, int]) -> None:
    response = client_for(alice).get(f"/entities/{maria['entity']}/facts/", {"as_of": "March"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422 and b"YYYY-MM-DD" in response.content


def test_the_fragment_speaks_chinese(alice: Any, client_for: Any, maria: dict[str, int]) -> None:
    url = f"/entities/{maria['entity']}/facts/"
    chinese = client_for(alice).get(url, {"as_of": "2026-02-01"}, HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9")
    english = client_for(alice).get(url, {"as_of": "2026-02-01"}, HTTP_ACCEPT_LANGUAGE="en-US")

    assert (
        "2026-02-01 时成立的事实（现实时间）。" in chinese.content.decode() and "尚未生效" in chinese.content.decode()
    )
    assert "Facts true on 2026-02-01 (world time)." in english.content.decode()
