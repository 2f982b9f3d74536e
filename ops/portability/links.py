"""Short-lived, single-use download links for exports (MCP `memory_export`), and the export rendered whole to bytes
(for MCP's inline answer and its size; downloads stream, streaming.py).

A link carries a token signed with the server's secret key (django.core.signing.TimestampSigner) naming the user,
the API token that asked for it (none for a browser session), a random nonce, the scope, the format and the
redaction. It is refused (one answer: not found) when

- the signature is bad or older than LINK_SECONDS (10 minutes): a changed link cannot name anyone else;
- the API token that made it is revoked or expired since, or its user deactivated: revoking a token ends its links;
- it was downloaded once already: its nonce is marked used (ops.models.ExportLinkUse) in the same transaction that
  renders the download, so two racing downloads give one file (the second insert waits on the first's key).

The download is rendered as the link's user at download time (row-level security acts as them then), so a link
cannot outlive a removed membership either.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.tokens import token_get_live
from ops.models import ExportLinkUse
from ops.portability.exporting import export_document
from ops.portability.markdown import markdown_zip
from ops.portability.streaming import FORMATS, ExportStream, export_filename, export_stream
from palace import rls
from palace.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

LINK_SECONDS = 600  # a link is for handing a file over now, not for keeping
SALT = "atrium.export-link"
DOWNLOAD_PATH = "/api/v1/export/download"  # the REST route that follows a link (api/routers/export.py)


@dataclass(frozen=True)
class ExportFile:
    data: bytes
    content_type: str
    filename: str
    palaces: int
    memories: int


def export_file(*, user: AbstractBaseUser, fmt: str, project: str | None, redacted: bool) -> ExportFile:
    """The export rendered as a file: JSON, or the Markdown vault as a zip."""
    if fmt not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)}", field="format")
    document = export_document(user=user, project=project or None, redacted=redacted)
    filename = export_filename(user=user, fmt=fmt, redacted=redacted)
    memories = sum(len(p["memories"]) for p in document["palaces"])
    if fmt == "markdown":
        data = markdown_zip(document)
        return ExportFile(data, "application/zip", filename, len(document["palaces"]), memories)
    data = json.dumps(document, ensure_ascii=False, indent=1).encode()
    return ExportFile(data, "application/json", filename, len(document["palaces"]), memories)


_GONE = "export link not found or expired: ask for a new one (links last {minutes} minutes and work once)"
_USED = "export link already used: each link downloads once; ask for a new one"
_REVOKED = "export link no longer valid: the token that made it was revoked or has expired; ask for a new one"


def link_token(
    *, user: AbstractBaseUser, fmt: str, project: str | None, redacted: bool, token_id: int | None = None
) -> str:
    """A signed link token for one download by `user`, bound to the API token `token_id` that asked for it (None: a
    browser session, bound to its user only)."""
    payload = {
        "u": user.pk,
        "t": token_id,
        "n": secrets.token_urlsafe(16),
        "f": fmt,
        "p": project or "",
        "r": bool(redacted),
    }
    return signing.TimestampSigner(salt=SALT).sign_object(payload)


def link_url(*, token: str, base: str) -> str:
    """The download URL of a link token: on ATRIUM_PUBLIC_URL when the operator set it (behind a proxy the request's
    own host may be an internal one), else on `base`, the scheme and host the request came in on."""
    root = (settings.ATRIUM_PUBLIC_URL or base).rstrip("/")
    return f"{root}{DOWNLOAD_PATH}?{urlencode({'token': token})}"


def link_open(token: str) -> tuple[Any, dict[str, Any]]:
    """The user and the export a token names, without using it up; NotFound for a bad or expired token, one whose
    user is inactive, or whose API token is revoked or expired (see the module docstring)."""
    gone = _GONE.format(minutes=LINK_SECONDS // 60)
    try:
        payload = signing.TimestampSigner(salt=SALT).unsign_object(token, max_age=LINK_SECONDS)
    except signing.BadSignature:  # also SignatureExpired
        raise NotFound(gone) from None
    user = get_user_model().objects.filter(pk=payload.get("u"), is_active=True).first()
    if user is None or not isinstance(payload.get("n"), str):
        raise NotFound(gone)  # a link signed before links carried a nonce cannot be marked used: refused
    token_id = payload.get("t")
    if token_id is not None:
        live = token_get_live(token_id=token_id)
        if live is None or live.user_id != user.pk:
            raise NotFound(_REVOKED)
    spec = {"fmt": payload["f"], "project": payload["p"] or None, "redacted": bool(payload["r"])}
    return user, {**spec, "nonce": payload["n"]}


def link_download(token: str) -> ExportStream:
    """Follow a link once: checked (link_open), marked used and its palaces checked as its user, in one transaction;
    the download is then read as it is sent (streaming.py). A download cut off after that has used the link."""
    user, spec = link_open(token)
    nonce = spec.pop("nonce")
    now = timezone.now()
    try:
        with transaction.atomic():
            ExportLinkUse.objects.create(nonce=nonce, user_id=user.pk, used_at=now)
            with rls.acting_as(user):
                stream = export_stream(user=user, **spec)
    except IntegrityError:
        raise NotFound(_USED) from None
    # Markers of links the signature already refuses are kept no longer (twice the life: clock skew between replicas).
    ExportLinkUse.objects.filter(used_at__lt=now - timedelta(seconds=2 * LINK_SECONDS)).delete()
    return stream
