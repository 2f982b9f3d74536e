"""The beat's daily clean-up of expired OAuth codes and tokens (accounts.tasks, the toolkit's cleartokens)."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from oauth2_provider.models import AccessToken, Application, Grant, RefreshToken

from accounts import tasks

pytestmark = pytest.mark.django_db


def _access(app: Application, user: Any, *, expires_in: timedelta) -> AccessToken:
    return AccessToken.objects.create(
        user=user, application=app, token=secrets.token_urlsafe(24), expires=timezone.now() + expires_in,
        scope="memory.read",
    )  # fmt: skip


def _refresh(app: Application, user: Any, access: AccessToken) -> RefreshToken:
    return RefreshToken.objects.create(user=user, application=app, token=secrets.token_urlsafe(24), access_token=access)


def _code(app: Application, user: Any, *, expires_in: timedelta) -> Grant:
    return Grant.objects.create(
        user=user, application=app, code=secrets.token_urlsafe(24), expires=timezone.now() + expires_in,
        redirect_uri="http://127.0.0.1:9/callback", scope="memory.read", code_challenge="x" * 43,
        code_challenge_method="S256",
    )  # fmt: skip


def test_expired_codes_and_tokens_go_and_live_ones_stay(alice: Any, settings: Any) -> None:
    app = Application.objects.create(
        name="agent", client_type=Application.CLIENT_PUBLIC, authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1:9/callback",
    )  # fmt: skip
    idle = timedelta(days=settings.ATRIUM_OAUTH_REFRESH_TOKEN_DAYS)
    expired_access = _access(app, alice, expires_in=-timedelta(minutes=1))  # no refresh token: goes at once
    live_access = _access(app, alice, expires_in=timedelta(minutes=30))
    dormant = _refresh(app, alice, _access(app, alice, expires_in=-(idle + timedelta(hours=1))))
    recent = _refresh(app, alice, _access(app, alice, expires_in=-timedelta(hours=1)))  # still refreshable
    expired_code = _code(app, alice, expires_in=-timedelta(seconds=1))
    live_code = _code(app, alice, expires_in=timedelta(seconds=60))

    removed = tasks.oauth_tokens_clear_task.run()

    assert removed == {"codes": 1, "access_tokens": 2, "refresh_tokens": 1, "registrations": 0}
    assert set(AccessToken.objects.values_list("pk", flat=True)) == {live_access.pk, recent.access_token_id}
    assert not AccessToken.objects.filter(pk=expired_access.pk).exists()
    assert list(RefreshToken.objects.values_list("pk", flat=True)) == [recent.pk]
    assert not RefreshToken.objects.filter(pk=dormant.pk).exists()
    assert list(Grant.objects.values_list("pk", flat=True)) == [live_code.pk]
    assert not Grant.objects.filter(pk=expired_code.pk).exists()
    assert tasks.oauth_tokens_clear_task.run() == {
        "codes": 0, "access_tokens": 0, "refresh_tokens": 0, "registrations": 0,
    }  # fmt: skip


def test_the_clean_up_is_on_the_beat_schedule() -> None:
    row = PeriodicTask.objects.get(name="atrium: OAuth expired tokens clean-up")
    assert row.task == tasks.OAUTH_CLEAR_TASK and row.enabled
    assert row.interval is not None and (row.interval.every, row.interval.period) == (1, "days")
