"""What a save request is and how it is cleaned before the pipeline (memory/save/pipeline.py) embeds and disposes it:
the typed `SaveItem` a door builds, and `prepare_item`, which strips forged tags, redacts and checks the lengths.
Corrections (memory.lifecycle.corrections) use the same cleaning."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from memory.knowledge import Mention, stated_entities
from memory.models import Memory
from memory.text import clean_line, is_low_entropy, redact, strip_protocol_tags
from palace.errors import InvalidInput
from palace.kinds import KINDS, KindName

SOURCES = tuple(Memory.Source.values)
MAX_PLACARD_CHARS = 200


@dataclass(frozen=True, kw_only=True)
class SaveItem:
    """One memory to save, as a door received it. Making one checks the field types (and that the kind and the
    importance are in range), so a harness that builds items from raw data gets the same clear InvalidInput as a
    door that validated them already; lengths are checked after cleaning (`prepare_item`)."""

    content: str
    kind: KindName
    placard: str = ""
    occurred_at: datetime | None = None
    speaker: str = ""
    source_session: str = ""
    source_turn: str = ""
    source_seq: int | None = None
    importance: float | None = None
    enrol_review: bool | None = None
    # A new memory's confidence (0-1); None: the model's default. Capture saves what it extracts low (0.4), so a
    # fact an agent or a person states outranks one a rule guessed, and each restatement raises it (MERGE).
    confidence: float | None = None
    restore: bool = False  # content matching a forgotten memory restores it instead of deferring (tombstones)
    # Entities the agent states itself: [{name, kind?, aliases?}] (memory.knowledge.extraction.stated_entities checks
    # them).
    entities: object = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "entities", stated_entities(self.entities))
        if self.kind not in KINDS:
            raise InvalidInput(f"kind must be one of {', '.join(KINDS)}", field="kind")
        if not isinstance(self.content, str):
            raise InvalidInput("content must be a string", field="content")
        for name in ("placard", "speaker", "source_session", "source_turn"):
            value = getattr(self, name)
            if value is None:
                object.__setattr__(self, name, "")
            elif not isinstance(value, str):
                raise InvalidInput(f"{name} must be a string")
        if self.source_seq is not None and (not isinstance(self.source_seq, int) or isinstance(self.source_seq, bool)):
            raise InvalidInput("source_seq must be an integer", field="source_seq")
        importance = self.importance
        if importance is not None and (
            not isinstance(importance, int | float) or isinstance(importance, bool) or not 0 <= importance <= 1
        ):
            raise InvalidInput("importance is a number from 0 to 1", field="importance")
        confidence = self.confidence
        if confidence is not None and (
            not isinstance(confidence, int | float) or isinstance(confidence, bool) or not 0 <= confidence <= 1
        ):
            raise InvalidInput("confidence is a number from 0 to 1", field="confidence")
        if self.occurred_at is not None and not isinstance(self.occurred_at, datetime):
            raise InvalidInput("occurred_at must be a datetime", field="occurred_at")
        if self.enrol_review is not None:
            object.__setattr__(self, "enrol_review", bool(self.enrol_review))
        if not isinstance(self.restore, bool):
            raise InvalidInput("restore must be true or false", field="restore")

    @classmethod
    def from_mapping(cls, raw: object) -> SaveItem:
        """A batch item that arrived as a mapping (a harness, a JSON body): known fields only, types checked."""
        if not isinstance(raw, Mapping):
            raise InvalidInput("an item must be an object")
        unknown = set(raw) - ITEM_FIELDS
        if unknown:
            raise InvalidInput(f"unknown item fields: {', '.join(sorted(map(str, unknown)))}")
        given: dict[str, Any] = dict(raw)
        return cls(content=given.pop("content", None), kind=given.pop("kind", None), **given)


ITEM_FIELDS = frozenset(f.name for f in fields(SaveItem))


@dataclass
class Prepared:
    """A save request after tag stripping, redaction and the length checks, before embedding."""

    content: str
    placard: str
    kind: str
    speaker: str
    source_session: str
    source_turn: str
    source_seq: int | None
    occurred_at: datetime
    importance: float | None
    enrol_review: bool | None
    restore: bool
    redactions: list[str]
    low_entropy: bool
    entities: tuple[Mention, ...] = ()
    confidence: float | None = None


# --- cleaning ----------------------------------------------------------------------------------------------------


def prepare_item(item: SaveItem, *, now: datetime) -> Prepared:
    """Clean one save request: check the lengths of what was sent, then strip forged tags (and NUL/control bytes)
    and redact.

    The limit applies to the text as sent, measured before any processing: it is the limit the doors' schemas state
    (maxLength in OpenAPI and in the MCP tools' input schemas), so text they accept is never refused here for its
    length, and text over it costs no regex work (redaction may lengthen a text: a marker can be longer than the
    secret it replaces)."""
    limit = settings.ATRIUM_MAX_CONTENT_CHARS
    if len(item.content) > limit:
        raise InvalidInput(
            f"content is at most {limit} characters (got {len(item.content)}): split it into several memories",
            field="content",
        )
    scrubbed = redact(strip_protocol_tags(item.content.replace("\x00", "")).strip())
    text = scrubbed.text.strip()
    if not text:
        raise InvalidInput("content is empty", field="content")
    placard_scrubbed = redact(clean_line(item.placard, "placard", MAX_PLACARD_CHARS))
    when = item.occurred_at or now
    if timezone.is_naive(when):
        when = timezone.make_aware(when, timezone.get_default_timezone())
    return Prepared(
        content=text,
        placard=placard_scrubbed.text[:MAX_PLACARD_CHARS],  # a redaction marker may be longer than the secret
        kind=item.kind,
        speaker=clean_line(item.speaker, "speaker", 120),
        source_session=clean_line(item.source_session, "source_session", 200),
        source_turn=clean_line(item.source_turn, "source_turn", 100),
        source_seq=item.source_seq,
        occurred_at=when,
        importance=None if item.importance is None else float(item.importance),
        enrol_review=item.enrol_review,
        restore=item.restore,
        redactions=sorted(set(scrubbed.types) | set(placard_scrubbed.types)),
        low_entropy=is_low_entropy(text),
        entities=stated_entities(item.entities),
        confidence=None if item.confidence is None else float(item.confidence),
    )


def check_source(source: object) -> str:
    if source not in SOURCES:
        raise InvalidInput(f"source must be one of {', '.join(SOURCES)}", field="source")
    assert isinstance(source, str)
    return source
