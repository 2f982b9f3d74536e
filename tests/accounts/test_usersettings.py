"""A user's settings (accounts.usersettings): the defaults, a change with its op row, a refused value that stores
nothing, and the choice of a search's fallback (the caller's explicit one wins over the setting)."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import UserSettings
from accounts.usersettings import (
    CAPTURE_MODES,
    SEARCH_FALLBACKS,
    search_fallback_choose,
    user_settings_get,
    user_settings_update,
)
from capture.models import CaptureSession
from memory.search import FALLBACKS
from palace.actors import Actor
from palace.errors import InvalidInput
from palace.models import OpLog


def test_the_settings_values_are_memory_searchs_fallbacks_and_none() -> None:
    # accounts cannot import memory (they are siblings): this keeps the two lists one.
    assert ("none", *FALLBACKS) == SEARCH_FALLBACKS


def test_the_capture_modes_are_captures_modes() -> None:
    # accounts sits below capture and cannot import it: this keeps the two lists one.
    assert set(CAPTURE_MODES) == set(CaptureSession.Mode.values) == {"off", "light", "eager"}


def test_a_user_who_never_saved_settings_gets_no_fallback_and_no_row(alice: Any) -> None:
    settings = user_settings_get(user=alice)

    assert settings.search_fallback == "none" and settings.capture_mode == "light" and settings.pk is None
    assert not UserSettings.objects.filter(user=alice).exists()
    chosen = search_fallback_choose(user=alice, asked=None)
    assert (chosen.fallback, chosen.source, chosen.for_search) == ("none", "setting", None)


def test_a_change_is_stored_with_its_op_row_and_only_for_that_user(alice: Any, bob: Any) -> None:
    user_settings_update(user=alice, search_fallback="overview", actor=Actor.for_user(alice))

    assert UserSettings.objects.get(user=alice).search_fallback == "overview"
    assert user_settings_get(user=bob).search_fallback == "none"  # another user's default is untouched
    op = OpLog.objects.get(op="user.settings")
    assert (op.actor_user_id, op.target_kind, op.target_id) == (alice.pk, "user", alice.pk)
    assert op.detail["search_fallback"] == {"before": "none", "after": "overview"}
    # Saving the same value again changes nothing and logs nothing.
    user_settings_update(user=alice, search_fallback="overview", actor=Actor.for_user(alice))
    assert OpLog.objects.filter(op="user.settings").count() == 1


def test_an_unknown_value_is_refused_and_nothing_is_stored(alice: Any) -> None:
    user_settings_update(user=alice, search_fallback="overview", actor=Actor.for_user(alice))
    ops = OpLog.objects.count()

    with pytest.raises(InvalidInput, match="search_fallback must be one of none, overview"):
        user_settings_update(user=alice, search_fallback="everything", actor=Actor.for_user(alice))

    assert UserSettings.objects.get(user=alice).search_fallback == "overview"
    assert OpLog.objects.count() == ops


def test_an_explicit_fallback_wins_over_the_setting(alice: Any) -> None:
    user_settings_update(user=alice, search_fallback="overview", actor=Actor.for_user(alice))

    by_setting = search_fallback_choose(user=alice, asked=None)
    told_none = search_fallback_choose(user=alice, asked="none")

    assert (by_setting.fallback, by_setting.source, by_setting.for_search) == ("overview", "setting", "overview")
    assert (told_none.fallback, told_none.source, told_none.for_search) == ("none", "request", None)


def test_the_capture_mode_changes_with_its_op_row_and_leaves_the_fallback(alice: Any) -> None:
    user_settings_update(user=alice, search_fallback="overview", actor=Actor.for_user(alice))
    user_settings_update(user=alice, capture_mode="eager", actor=Actor.for_user(alice))

    row = UserSettings.objects.get(user=alice)
    assert (row.search_fallback, row.capture_mode) == ("overview", "eager")
    op = OpLog.objects.filter(op="user.settings").latest("id")
    assert op.detail["capture_mode"] == {"before": "light", "after": "eager"}
    assert "search_fallback" not in op.detail  # only what changed is named


def test_an_unknown_capture_mode_is_refused_naming_it_and_nothing_is_stored(alice: Any) -> None:
    user_settings_update(user=alice, capture_mode="eager", actor=Actor.for_user(alice))  # control: a valid value
    ops = OpLog.objects.count()

    with pytest.raises(InvalidInput, match="capture_mode must be one of off, light, eager") as refused:
        user_settings_update(user=alice, search_fallback="overview", capture_mode="loud", actor=Actor.for_user(alice))

    assert refused.value.detail == {"field": "capture_mode"}
    row = UserSettings.objects.get(user=alice)
    assert (row.search_fallback, row.capture_mode) == ("none", "eager")  # neither field changed
    assert OpLog.objects.count() == ops


# --- the REST door: GET and PUT /api/v1/settings -----------------------------------------------------------------


def _rest(token: str) -> Any:
    from django.test import Client

    return Client(headers={"Authorization": f"Bearer {token}"})


def test_the_rest_schema_offers_the_settings_values() -> None:
    from typing import get_args

    from api.routers.usersettings import UserSettingsIn

    fields = UserSettingsIn.model_fields
    # As sets: typing caches an equal Literal written in another order (capture's router has one).
    assert set(get_args(get_args(fields["capture_mode"].annotation)[0])) == set(CAPTURE_MODES)
    assert set(get_args(get_args(fields["search_fallback"].annotation)[0])) == set(SEARCH_FALLBACKS)


def test_rest_reads_and_changes_your_settings_with_an_op_row(alice: Any, bob: Any, token_for: Any) -> None:
    client = _rest(token_for(alice))
    assert client.get("/api/v1/settings").json() == {"search_fallback": "none", "capture_mode": "light"}

    changed = client.put("/api/v1/settings", {"capture_mode": "eager"}, content_type="application/json")

    assert changed.status_code == 200
    assert changed.json() == {"search_fallback": "none", "capture_mode": "eager"}
    assert UserSettings.objects.get(user=alice).capture_mode == "eager"
    assert not UserSettings.objects.filter(user=bob).exists()  # the user is the token's, no one else's
    op = OpLog.objects.get(op="user.settings")
    assert op.actor_user_id == alice.pk and op.detail["capture_mode"] == {"before": "light", "after": "eager"}
    assert client.get("/api/v1/settings").json()["capture_mode"] == "eager"


def test_rest_refuses_a_bad_capture_mode_and_a_read_token_and_changes_nothing(alice: Any, token_for: Any) -> None:
    writer = _rest(token_for(alice))
    reader = _rest(token_for(alice, scope="read"))
    writer.put("/api/v1/settings", {"capture_mode": "eager"}, content_type="application/json")  # control
    ops = OpLog.objects.count()

    bad = writer.put(
        "/api/v1/settings", {"search_fallback": "overview", "capture_mode": "loud"}, content_type="application/json"
    )
    read_only = reader.put("/api/v1/settings", {"capture_mode": "off"}, content_type="application/json")

    assert bad.status_code == 422
    message = bad.json()["error"]["message"]
    assert message.startswith("payload.capture_mode: ") and all(f"'{m}'" in message for m in CAPTURE_MODES)
    assert read_only.status_code == 403 and "read scope" in read_only.json()["error"]["message"]
    row = UserSettings.objects.get(user=alice)
    assert (row.search_fallback, row.capture_mode) == ("none", "eager")
    assert OpLog.objects.count() == ops
    assert reader.get("/api/v1/settings").json()["capture_mode"] == "eager"  # a read token may read
