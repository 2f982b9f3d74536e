"""The Palace page's search says how it was made: a How line (arms, floor, rewrite, fallback and where it came
from), a fallback choice in the form, and on a miss with the overview fallback an Overview region labelled as one.
Your settings page (/account/) holds the default fallback, honoured when the form does not choose one."""

from __future__ import annotations

import re
from typing import Any

import pytest

from accounts.models import UserSettings
from accounts.usersettings import user_settings_update
from memory.models import Memory
from palace.actors import Actor
from palace.models import OpLog, Palace
from tests.fakes.team_notes import HIT, HIT_ANSWER, MISS, save_team_notes


@pytest.fixture
def notes(personal: Palace) -> list[Memory]:
    return save_team_notes(personal)


def how_of(html: str) -> dict[str, str]:
    (tag,) = re.findall(r'<p class="searchhow" id="search-how"[^>]*>', html)
    return dict(re.findall(r'data-([a-z-]+)="([^"]*)"', tag))


def overview_labels(html: str) -> list[str]:
    region = html.split('id="overview"', 1)[1] if 'id="overview"' in html else ""
    return re.findall(r'<li class="row" data-label="([^"]*)"', region)


def test_a_miss_with_the_overview_fallback_shows_the_labelled_overview_in_the_partial(
    alice: Any, client_for: Any, notes: list[Memory]
) -> None:
    response = client_for(alice).get("/palace/", {"q": MISS, "fallback": "overview"}, HTTP_HX_REQUEST="true")

    html = response.content.decode()
    assert html.lstrip().startswith('<div id="results">') and "<html" not in html  # only the region
    assert how_of(html) == {
        "arms": "lexical semantic",
        "fallback": "overview",
        "fallback-from": "request",
        "fallback-used": "yes",
    }
    assert "How: arms full-text + semantic · floor 0.8" in re.sub(r"<[^>]+>", "", html)
    labels = overview_labels(html)
    assert labels and set(labels) == {"overview"}
    region = html.split('id="overview"', 1)[1]
    assert "sem#" not in region and "lex#" not in region  # never dressed as hits
    assert "an overview, not an answer" in region
    assert "10 memories" in region and "4 memories" in region
    assert "Nothing matched" in html


def test_a_hit_says_no_fallback_from_the_setting_and_shows_no_overview(
    alice: Any, client_for: Any, notes: list[Memory]
) -> None:
    html = client_for(alice).get("/palace/", {"q": HIT}, HTTP_HX_REQUEST="true").content.decode()

    assert HIT_ANSWER in html
    assert how_of(html) == {
        "arms": "lexical semantic",
        "fallback": "none",
        "fallback-from": "setting",
        "fallback-used": "no",
    }
    assert 'id="overview"' not in html


def test_the_setting_is_the_default_and_the_forms_choice_wins(alice: Any, client_for: Any, notes: list[Memory]) -> None:
    client = client_for(alice)
    unset = client.get("/palace/", {"q": MISS}, HTTP_HX_REQUEST="true").content.decode()
    user_settings_update(user=alice, search_fallback="overview", actor=Actor.for_user(alice))
    by_setting = client.get("/palace/", {"q": MISS}, HTTP_HX_REQUEST="true").content.decode()
    told_none = client.get("/palace/", {"q": MISS, "fallback": "none"}, HTTP_HX_REQUEST="true").content.decode()
    made_up = client.get("/palace/", {"q": MISS, "fallback": "everything"}, HTTP_HX_REQUEST="true").content.decode()

    assert overview_labels(unset) == [] and how_of(unset)["fallback"] == "none"  # control: off by default
    assert overview_labels(by_setting) and how_of(by_setting)["fallback-from"] == "setting"
    assert overview_labels(told_none) == []
    assert how_of(told_none)["fallback"] == "none" and how_of(told_none)["fallback-from"] == "request"
    # A hand-made value is ignored like the page's other filters, and the How line says the setting applied.
    assert how_of(made_up)["fallback-from"] == "setting" and overview_labels(made_up)


def test_the_form_offers_the_fallbacks_and_keeps_the_choice(alice: Any, client_for: Any, notes: list[Memory]) -> None:
    page = client_for(alice).get("/palace/", {"q": MISS, "fallback": "overview"}).content.decode()

    (select,) = re.findall(r'<select id="fallback" name="fallback".*?</select>', page, re.S)
    assert re.findall(r'<option value="([^"]*)"', select) == ["", "none", "overview"]
    assert '<option value="overview" selected>' in select


def test_an_outsiders_overview_shows_only_their_own_palace(
    alice: Any, charlie: Any, client_for: Any, notes: list[Memory]
) -> None:
    owner = client_for(alice).get("/palace/", {"q": MISS, "fallback": "overview"}).content.decode()
    outsider = client_for(charlie).get("/palace/", {"q": MISS, "fallback": "overview"}).content.decode()

    assert "The logo is dark blue" in owner  # positive control: the newest note is in alice's overview
    assert how_of(outsider)["fallback-used"] == "yes" and overview_labels(outsider) == []
    assert not any(m.content in outsider for m in notes)


# --- the settings page -----------------------------------------------------------------------------------------


def test_the_settings_page_shows_and_stores_the_default_fallback(alice: Any, bob: Any, client_for: Any) -> None:
    client = client_for(alice)
    before = client.get("/account/").content.decode()
    assert re.search(r'<input type="radio" name="search_fallback" value="none"[^>]*checked', before)

    saved = client.post("/account/", {"search_fallback": "overview", "user": bob.pk})

    assert saved.status_code == 200 and "Saved." in saved.content.decode()
    assert UserSettings.objects.get(user=alice).search_fallback == "overview"
    assert not UserSettings.objects.filter(user=bob).exists()  # the acting user comes from the session only
    op = OpLog.objects.get(op="user.settings")
    assert op.actor_user_id == alice.pk and op.detail["search_fallback"] == {"before": "none", "after": "overview"}
    after = client.get("/account/").content.decode()
    assert re.search(r'<input type="radio" name="search_fallback" value="overview"[^>]*checked', after)


def test_a_bad_setting_is_refused_with_a_message_and_stores_nothing(alice: Any, client_for: Any) -> None:
    response = client_for(alice).post("/account/", {"search_fallback": "everything"})

    assert response.status_code == 422
    assert 'role="alert"' in response.content.decode() and "everything" in response.content.decode()
    assert not UserSettings.objects.exists() and not OpLog.objects.filter(op="user.settings").exists()


def test_the_settings_page_needs_a_login(client: Any, alice: Any, client_for: Any) -> None:
    assert client.get("/account/").status_code == 302
    assert client.post("/account/", {"search_fallback": "overview"}).status_code == 302
    assert not UserSettings.objects.exists()
    assert client_for(alice).get("/account/").status_code == 200  # positive control


def test_the_settings_page_shows_and_stores_the_capture_mode(alice: Any, client_for: Any) -> None:
    client = client_for(alice)
    before = client.get("/account/").content.decode()
    assert re.search(r'<input type="radio" name="capture_mode" value="light"[^>]*checked', before)

    saved = client.post("/account/", {"search_fallback": "none", "capture_mode": "eager"})

    assert saved.status_code == 200 and "Saved." in saved.content.decode()
    row = UserSettings.objects.get(user=alice)
    assert (row.search_fallback, row.capture_mode) == ("none", "eager")
    op = OpLog.objects.get(op="user.settings")
    assert op.actor_user_id == alice.pk and op.detail["capture_mode"] == {"before": "light", "after": "eager"}
    assert "search_fallback" not in op.detail  # unchanged, so not named
    after = client.get("/account/").content.decode()
    assert re.search(r'<input type="radio" name="capture_mode" value="eager"[^>]*checked', after)


def test_a_bad_capture_mode_is_refused_with_a_message_and_stores_nothing(alice: Any, client_for: Any) -> None:
    client = client_for(alice)
    client.post("/account/", {"search_fallback": "none", "capture_mode": "eager"})  # control: a valid value is kept
    ops = OpLog.objects.count()

    response = client.post("/account/", {"search_fallback": "overview", "capture_mode": "loud"})

    assert response.status_code == 422
    assert 'role="alert"' in response.content.decode() and "loud" in response.content.decode()
    row = UserSettings.objects.get(user=alice)
    assert (row.search_fallback, row.capture_mode) == ("none", "eager")
    assert OpLog.objects.count() == ops
