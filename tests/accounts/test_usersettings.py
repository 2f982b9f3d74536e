"""A user's settings (accounts.usersettings): the defaults, a change with its op row, a refused value that stores
nothing, and the choice of a search's fallback (the caller's explicit one wins over the setting)."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import UserSettings
from accounts.usersettings import (
    SEARCH_FALLBACKS,
    search_fallback_choose,
    user_settings_get,
    user_settings_update,
)
from memory.search import FALLBACKS
from palace.actors import Actor
from palace.errors import InvalidInput
from palace.models import OpLog


def test_the_settings_values_are_memory_searchs_fallbacks_and_none() -> None:
    # accounts cannot import memory (they are siblings): this keeps the two lists one.
    assert ("none", *FALLBACKS) == SEARCH_FALLBACKS


def test_a_user_who_never_saved_settings_gets_no_fallback_and_no_row(alice: Any) -> None:
    settings = user_settings_get(user=alice)

    assert settings.search_fallback == "none" and settings.pk is None
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
