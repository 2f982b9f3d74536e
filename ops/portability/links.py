"""Short-lived download links for exports (MCP `memory_export`), and the one place an export is rendered to bytes.

A link carries a token signed with the server's secret key (django.core.signing.TimestampSigner) naming the user,
the scope, the format and the redaction; it is valid for LINK_SECONDS. Whoever holds it downloads what that user may
read at download time (row-level security acts as them then), so a link cannot outlive a removed membership and a
changed token cannot name anyone else (the signature breaks).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.core import signing

from ops.portability.exporting import export_document
from ops.portability.markdown import markdown_zip
from palace.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

LINK_SECONDS = 600
SALT = "atrium.export-link"
FORMATS = ("json", "markdown")


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
    stem = f"atrium-{user.get_username()}{'-redacted' if redacted else ''}"
    memories = sum(len(p["memories"]) for p in document["palaces"])
    if fmt == "markdown":
        data = markdown_zip(document)
        return ExportFile(data, "application/zip", f"{stem}.zip", len(document["palaces"]), memories)
    data = json.dumps(document, ensure_ascii=False, indent=1).encode()
    return ExportFile(data, "application/json", f"{stem}.json", len(document["palaces"]), memories)


def link_token(*, user: AbstractBaseUser, fmt: str, project: str | None, redacted: bool) -> str:
    payload = {"u": user.pk, "f": fmt, "p": project or "", "r": bool(redacted)}
    return signing.TimestampSigner(salt=SALT).sign_object(payload)


def link_open(token: str) -> tuple[Any, dict[str, Any]]:
    """The user and the export a token names; NotFound for a bad, expired or orphaned token (one answer for all)."""
    try:
        payload = signing.TimestampSigner(salt=SALT).unsign_object(token, max_age=LINK_SECONDS)
    except signing.BadSignature:  # also SignatureExpired
        raise NotFound("export link not found or expired: ask for a new one") from None
    user = get_user_model().objects.filter(pk=payload.get("u"), is_active=True).first()
    if user is None:
        raise NotFound("export link not found or expired: ask for a new one")
    return user, {"fmt": payload["f"], "project": payload["p"] or None, "redacted": bool(payload["r"])}
