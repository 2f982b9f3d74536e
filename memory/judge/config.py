"""The judge's settings: read per use from the one JudgeSettings row, edited by whoever holds the judge settings
permissions (below), tested before saving.

The API key is encrypted at rest (Fernet, keyed from SECRET_KEY) and never leaves this module in clear except to
the HTTP client: reads give a mask (the last 4 characters when the key is longer than 8, otherwise nothing), and an
empty key field on update means "keep the stored key" (forms are never back-filled). Turning the judge on without a
key leaves it off. Settings are read from the database on every use (one primary-key read, only when a save falls
in the fuzzy band), so a change takes effect at once in every process, without a restart or a cache to invalidate.

Who: the Django model permissions on JudgeSettings, `memory.view_judgesettings` to read the settings and
`memory.change_judgesettings` to change or test them (a superuser holds both), in every door — REST, the panel and
the admin — through `judge_settings_allowed`. Being staff is not enough: the judge sees every palace's save pairs
and decides which saves are merged away, so it is a grant of its own.

The key is bound to the endpoint it was entered for: it is sent only to the stored endpoint. Testing another
endpoint without typing a key sends none, and saving another endpoint keeps the stored key only when it is typed
again (or removed). Every endpoint obeys the egress rule (memory.providers.egress).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import time
from dataclasses import dataclass, field
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.db import transaction

from memory.judge.prompt import judge_pair
from memory.models import MAX_TIMEOUT_MS, MIN_TIMEOUT_MS, JudgeSettings
from memory.providers import EgressRefused, LLMConfig, LLMError, LLMTimeoutError, egress_check, llm_config
from palace.actors import Actor
from palace.errors import InvalidInput, PermissionDenied
from palace.oplog import oplog_write

# Why the rules ruled instead of the model (Adjudication.fallback_reason; the view filters on these).
OFF = "off"
NO_KEY = "no_key"
NO_ENDPOINT = "no_endpoint"
KEY_UNREADABLE = "key_unreadable"
TIMEOUT = "timeout"
FAILED = "failed"
SKIPPED = "skipped"
# A bulk save (a batch, an import merge, a capture: memory.save.bulk) is ruled by the rules alone: a model call per
# item would cost a backfill thousands of calls and hold the palace's lock for each.
BULK = "bulk"
FALLBACK_REASONS = (OFF, NO_KEY, NO_ENDPOINT, KEY_UNREADABLE, TIMEOUT, FAILED, SKIPPED, BULK)


def _fernet() -> Fernet:
    digest = hashlib.sha256(b"atrium.judge.api_key:" + settings.SECRET_KEY.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def key_mask(*, length: int, last4: str) -> str:
    """What a page or an API may show of a stored key: nothing of it when short, its last 4 characters when long."""
    if length == 0:
        return ""
    return "•" * 8 + (last4 if length > 8 else "")


@dataclass(frozen=True)
class Thresholds:
    merge_at: float
    accept_at: float
    contradiction_at: float


def thresholds() -> Thresholds:
    return Thresholds(
        merge_at=settings.ATRIUM_JUDGE_MERGE_AT,
        accept_at=settings.ATRIUM_JUDGE_ACCEPT_AT,
        contradiction_at=settings.ATRIUM_JUDGE_CONTRADICTION_AT,
    )


@dataclass(frozen=True)
class JudgeConfig:
    """The judge as configured right now: `llm` is set when the model may be asked, else `off_reason` says why."""

    llm: LLMConfig | None
    off_reason: str
    timeout_ms: int
    thresholds: Thresholds = field(default_factory=thresholds)


def judge_settings_row() -> JudgeSettings:
    row, _ = JudgeSettings.objects.get_or_create(pk=1)
    return row


def _llm(*, base_url: str, model: str, api_key: str, timeout_ms: int) -> LLMConfig | None:
    # No retry (the "judge" purpose): a write waits for at most one attempt, bounded by the timeout.
    return llm_config("judge", base_url=base_url, model=model, api_key=api_key, timeout_s=timeout_ms / 1000)


def judge_config() -> JudgeConfig:
    """The judge's configuration, read now (see the module docstring)."""
    row = JudgeSettings.objects.filter(pk=1).first()
    if row is None or not row.enabled:
        return JudgeConfig(llm=None, off_reason=OFF, timeout_ms=row.timeout_ms if row else 3000)
    if not row.base_url or not row.model:
        return JudgeConfig(llm=None, off_reason=NO_ENDPOINT, timeout_ms=row.timeout_ms)
    if not row.api_key_encrypted:
        return JudgeConfig(llm=None, off_reason=NO_KEY, timeout_ms=row.timeout_ms)
    try:
        api_key = _fernet().decrypt(row.api_key_encrypted.encode()).decode()
    except InvalidToken:  # SECRET_KEY changed since the key was stored: enter it again
        return JudgeConfig(llm=None, off_reason=KEY_UNREADABLE, timeout_ms=row.timeout_ms)
    llm = _llm(base_url=row.base_url, model=row.model, api_key=api_key, timeout_ms=row.timeout_ms)
    if llm is None:
        return JudgeConfig(llm=None, off_reason=NO_ENDPOINT, timeout_ms=row.timeout_ms)
    return JudgeConfig(llm=llm, off_reason="", timeout_ms=row.timeout_ms)


def judge_settings_public() -> dict[str, Any]:
    """The settings as a page or an API may show them: the key only as a mask."""
    row = judge_settings_row()
    t = thresholds()
    return {
        "enabled": row.enabled,
        "active": judge_config().llm is not None,
        "base_url": row.base_url,
        "model": row.model,
        "timeout_ms": row.timeout_ms,
        "api_key_set": bool(row.api_key_encrypted),
        "api_key_mask": key_mask(length=row.api_key_length, last4=row.api_key_last4),
        "merge_at": t.merge_at,
        "accept_at": t.accept_at,
        "contradiction_at": t.contradiction_at,
        "updated_at": row.updated_at,
    }


VIEW_PERMISSION = "memory.view_judgesettings"
CHANGE_PERMISSION = "memory.change_judgesettings"


def judge_settings_allowed(user: Any, *, change: bool) -> bool:
    """May `user` read (change=False) or change and test (change=True) the judge's settings? The one check of
    every door (the module docstring): the change permission also reads, as in Django's admin."""
    if user is None or not getattr(user, "is_active", False):
        return False
    if user.has_perm(CHANGE_PERMISSION):
        return True
    return not change and bool(user.has_perm(VIEW_PERMISSION))


def judge_settings_require(actor: Actor, *, change: bool) -> None:
    if not judge_settings_allowed(actor.user, change=change):
        needed = CHANGE_PERMISSION if change else VIEW_PERMISSION
        raise PermissionDenied(f"the judge settings need the {needed} permission (ask an administrator)")


def _same_endpoint(a: str, b: str) -> bool:
    return a.strip().rstrip("/") == b.strip().rstrip("/")


def _check(*, base_url: str, model: str, timeout_ms: int) -> str:
    """The values' bounds and the endpoint's egress rule (422 with what to send); the endpoint, normalised."""
    if not MIN_TIMEOUT_MS <= timeout_ms <= MAX_TIMEOUT_MS:
        raise InvalidInput(f"timeout_ms is from {MIN_TIMEOUT_MS} to {MAX_TIMEOUT_MS}", field="timeout_ms")
    if len(base_url) > 500 or len(model) > 200:
        raise InvalidInput("the endpoint is at most 500 characters and the model at most 200")
    if not base_url:
        return ""
    try:
        return egress_check(base_url)
    except EgressRefused as exc:
        raise InvalidInput(str(exc), field="base_url") from None


def _key_stays(row: JudgeSettings | None, *, base_url: str, api_key: str, clear_key: bool) -> None:
    # A stored key would follow a new endpoint silently: it must be typed again (or removed) to move.
    moved = row is not None and bool(row.api_key_encrypted) and not _same_endpoint(row.base_url, base_url)
    if moved and not api_key.strip() and not clear_key:
        raise InvalidInput(
            "the stored API key is sent only to the endpoint it was entered for: to change the endpoint, enter the "
            "key again (or remove the stored key)",
            field="api_key",
        )


def judge_settings_check(*, base_url: str, model: str, timeout_ms: int, api_key: str, clear_key: bool) -> str:
    """What a save is refused for (InvalidInput, the message says what to send), before anything is written: the
    bounds, the egress rule, and a stored key stays with its endpoint. Returns the normalised endpoint."""
    base_url = _check(base_url=base_url.strip(), model=model.strip(), timeout_ms=timeout_ms)
    row = JudgeSettings.objects.filter(pk=1).first()
    _key_stays(row, base_url=base_url, api_key=api_key, clear_key=clear_key)
    return base_url


def judge_settings_update(
    *,
    actor: Actor,
    enabled: bool,
    base_url: str,
    model: str,
    timeout_ms: int,
    api_key: str = "",
    clear_key: bool = False,
) -> dict[str, Any]:
    """Save the judge settings (the change permission). An empty `api_key` keeps the stored one, for the same
    endpoint only (judge_settings_check); `clear_key` removes it. Turning the judge on without a key (given or
    stored) leaves it off. Writes the op log (never the key)."""
    judge_settings_require(actor, change=True)
    model, api_key = model.strip(), api_key.strip()
    base_url = _check(base_url=base_url.strip(), model=model, timeout_ms=timeout_ms)  # may resolve: no lock held
    with transaction.atomic():
        row = JudgeSettings.objects.select_for_update().get(pk=judge_settings_row().pk)
        _key_stays(row, base_url=base_url, api_key=api_key, clear_key=clear_key)
        key_changed = bool(api_key) or (clear_key and bool(row.api_key_encrypted))
        if clear_key:
            row.api_key_encrypted, row.api_key_last4, row.api_key_length = "", "", 0
        if api_key:
            row.api_key_encrypted = _fernet().encrypt(api_key.encode()).decode()
            row.api_key_last4, row.api_key_length = api_key[-4:], len(api_key)
        row.enabled = bool(enabled) and bool(row.api_key_encrypted) and bool(base_url) and bool(model)
        row.base_url, row.model, row.timeout_ms = base_url, model, timeout_ms
        row.updated_by = actor.user  # type: ignore[assignment]
        row.save()
        oplog_write(
            op="judge.settings",
            actor=actor,
            target_kind="judge",
            target_id=row.pk,
            detail={
                "enabled": row.enabled,
                "requested_enabled": bool(enabled),
                "base_url": base_url,
                "model": model,
                "timeout_ms": timeout_ms,
                "key_changed": key_changed,
            },
        )
    return judge_settings_public()


# Which key a test sent (ConnectionReport.key): the one typed, the stored one (only to the stored endpoint), none.
KEY_TYPED, KEY_STORED, KEY_NONE = "typed", "stored", "none"


@dataclass(frozen=True)
class ConnectionReport:
    reachable: bool
    model: str
    elapsed_ms: int
    error: str = ""  # a status code or an error class, never the endpoint's words
    key: str = KEY_NONE


def judge_test_connection(
    *, actor: Actor, base_url: str, model: str, timeout_ms: int, api_key: str = ""
) -> ConnectionReport:
    """Ask the endpoint, with the values as typed (nothing is stored), to judge one trivial pair; report whether a
    valid ruling came back, from which model, the round trip and which key was sent (`key`). An empty `api_key`
    uses the stored key only when the endpoint is the stored one; another endpoint is asked without a key."""

    judge_settings_require(actor, change=True)
    model, api_key = model.strip(), api_key.strip()
    base_url = _check(base_url=base_url.strip(), model=model, timeout_ms=timeout_ms)
    if not base_url or not model:
        raise InvalidInput("give the endpoint and the model to test")
    key = KEY_TYPED if api_key else KEY_NONE
    row = JudgeSettings.objects.filter(pk=1).first()
    if not api_key and row is not None and row.api_key_encrypted and _same_endpoint(row.base_url, base_url):
        with contextlib.suppress(InvalidToken):  # unreadable after a SECRET_KEY change: test without it
            api_key, key = _fernet().decrypt(row.api_key_encrypted.encode()).decode(), KEY_STORED
    config = _llm(base_url=base_url, model=model, api_key=api_key, timeout_ms=timeout_ms)
    if config is None:
        raise InvalidInput("the endpoint must be an http:// or https:// URL", field="base_url")
    started = time.monotonic()
    try:
        judge_pair(config=config, new="The office opens at 9.", old="The office opens at 9 am.", kind="fact")
    except LLMError as exc:
        elapsed = round((time.monotonic() - started) * 1000)
        kind = "timed out" if isinstance(exc, LLMTimeoutError) else "failed"
        error = f"{kind}: {type(exc).__name__}: {str(exc)[:200]}"  # llm.py's messages carry no remote text
        return ConnectionReport(reachable=False, model=model, elapsed_ms=elapsed, error=error, key=key)
    elapsed = round((time.monotonic() - started) * 1000)
    return ConnectionReport(reachable=True, model=model, elapsed_ms=elapsed, key=key)
