"""Celery tasks of the accounts app: the daily clean-up of expired OAuth tokens (beat row from migration
accounts/0008_oauth_tokens_clear_schedule)."""

from __future__ import annotations

import logging

from celery import shared_task

from accounts.oauth import oauth_tokens_clear

log = logging.getLogger(__name__)

OAUTH_CLEAR_TASK = "accounts.oauth_tokens_clear"


@shared_task(name=OAUTH_CLEAR_TASK, ignore_result=True)
def oauth_tokens_clear_task() -> dict[str, int]:
    removed = oauth_tokens_clear()
    log.info("oauth clean-up: %s", removed)
    return removed
