"""The beat's daily clean-up of expired OAuth codes and tokens (accounts.tasks, the toolkit's cleartokens)."""

from __future__ import annotations

import secrets
import uuid
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

    assert removed == {"codes": 1, "access_tokens": 2, "refresh_tokens": 1, "grants_ended": 0, "registrations": 0}
    assert set(AccessToken.objects.values_list("pk", flat=True)) == {live_access.pk, recent.access_token_id}
    assert not AccessToken.objects.filter(pk=expired_access.pk).exists()
    assert list(RefreshToken.objects.values_list("pk", flat=True)) == [recent.pk]
    assert not RefreshToken.objects.filter(pk=dormant.pk).exists()
    assert list(Grant.objects.values_list("pk", flat=True)) == [live_code.pk]
    assert not Grant.objects.filter(pk=expired_code.pk).exists()
    assert tasks.oauth_tokens_clear_task.run() == {
        "codes": 0, "access_tokens": 0, "refresh_tokens": 0, "grants_ended": 0, "registrations": 0,
    }  # fmt: skip


def test_the_clean_up_is_on_the_beat_schedule() -> None:
    row = PeriodicTask.objects.get(name="atrium: OAuth expired tokens clean-up")
    assert row.task == tasks.OAUTH_CLEAR_TASK and row.enabled
    assert row.interval is not None and (row.interval.every, row.interval.period) == (1, "days")


def test_grants_whose_sign_in_is_over_are_revoked_with_an_op_row_and_live_ones_stay(alice: Any) -> None:
    """Each approval is its own grant: one whose client can no longer use it (its family's refresh tokens revoked,
    or its code expired unexchanged) is revoked by the clean-up, so the Tokens page stops listing it as active; a
    grant with a live refresh token and one whose code is still waiting stay."""
    from accounts.models import ApiToken
    from accounts.oauth import oauth_grant_approve
    from palace.actors import Actor
    from palace.models import OpLog

    app = Application.objects.create(
        name="agent", client_type=Application.CLIENT_PUBLIC, authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1:9/callback",
    )  # fmt: skip

    def grant(family: Any = None, code: Grant | None = None) -> ApiToken:
        row = oauth_grant_approve(user=alice, application=app, scopes=["memory.read"], project=None,
                                  actor=Actor.for_user(alice))  # fmt: skip
        ApiToken.objects.filter(pk=row.pk).update(
            oauth_token_family=family, oauth_code=code, created_at=timezone.now() - timedelta(hours=2)
        )
        return row

    live_refresh = _refresh(app, alice, _access(app, alice, expires_in=timedelta(minutes=30)))
    RefreshToken.objects.filter(pk=live_refresh.pk).update(token_family=uuid.uuid4())
    live_refresh.refresh_from_db()
    replayed = _refresh(app, alice, _access(app, alice, expires_in=timedelta(minutes=30)))
    RefreshToken.objects.filter(pk=replayed.pk).update(token_family=uuid.uuid4())
    replayed.refresh_from_db()
    RefreshToken.revoke_family(replayed.token_family)  # what reuse detection does
    in_use = grant(live_refresh.token_family)
    waiting = grant(code=_code(app, alice, expires_in=timedelta(seconds=60)))
    ended = grant(replayed.token_family)
    never_exchanged = grant(code=_code(app, alice, expires_in=-timedelta(seconds=1)))  # the clean-up deletes it
    just_approved = oauth_grant_approve(
        user=alice, application=app, scopes=["memory.read"], project=None, actor=Actor.for_user(alice)
    )  # its code is being exchanged right now, perhaps

    removed = tasks.oauth_tokens_clear_task.run()

    assert removed["grants_ended"] == 2
    revoked = set(ApiToken.objects.filter(revoked_at__isnull=False).values_list("pk", flat=True))
    assert revoked == {ended.pk, never_exchanged.pk}
    assert {in_use.pk, waiting.pk, just_approved.pk}.isdisjoint(revoked)  # positive controls stay active
    rows = OpLog.objects.filter(op="token.revoke")
    assert {r.target_id for r in rows} == {ended.pk, never_exchanged.pk}
    assert all(
        (r.actor_kind, r.actor_name) == ("system", "oauth_tokens_clear") and "sign-in ended" in r.reason for r in rows
    )
