"""The cleaning every text from outside goes through before it is stored or echoed (content, placards, room names,
reasons, labels): forged protocol tags and control characters removed (memory/text/protocol_tags.py), whitespace
trimmed or collapsed, and, for what is stored, secrets redacted (memory/text/redaction.py). Pure: no Django models,
no I/O."""

from __future__ import annotations

from memory.text.protocol_tags import strip_protocol_tags
from memory.text.redaction import RedactionResult, redact
from palace.errors import InvalidInput


def clean_inbound_text(text: str, *, one_line: bool = False) -> str:
    """The cleaning every text from outside goes through before it is stored or echoed: forged protocol tags and
    control characters removed, surrounding whitespace trimmed, and with ``one_line`` (placards, room names,
    labels) every run of whitespace collapsed to one space."""
    cleaned = strip_protocol_tags(text)
    return " ".join(cleaned.split()) if one_line else cleaned.strip()


def scrub_inbound_text(text: str, *, one_line: bool = False) -> RedactionResult:
    """:func:`clean_inbound_text`, then :func:`redact`: for every text a user or agent writes into Atrium
    (content, placard, room name, reason). The result's ``types`` go to the op row."""
    return redact(clean_inbound_text(text, one_line=one_line))


def clean_line(text: str, name: str, limit: int) -> str:
    """One line of text: at most `limit` characters as sent (InvalidInput naming the field `name` when longer,
    measured before any cleaning, as the doors' schemas state it), then forged tags stripped and whitespace
    collapsed."""
    if len(text) > limit:
        raise InvalidInput(f"{name} is at most {limit} characters (got {len(text)})", field=name)
    return " ".join(strip_protocol_tags(text).split())
