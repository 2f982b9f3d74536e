"""The structure of Atrium: palaces (the unit of isolation), who belongs to them, and the ledger of changes."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Palace(models.Model):
    class Kind(models.TextChoices):
        PERSONAL = "personal"
        PROJECT = "project"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    name = models.CharField(max_length=200)
    # Normalised git origin (host/owner/repo) for project palaces; null for personal ones.
    origin_key = models.CharField(max_length=400, null=True, blank=True, unique=True)
    # The person a personal palace belongs to; null for project palaces.
    personal_owner = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="personal_palace"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                name="palace_kind_key",
                condition=(
                    models.Q(kind="personal", personal_owner__isnull=False, origin_key__isnull=True)
                    | models.Q(kind="project", personal_owner__isnull=True, origin_key__isnull=False)
                ),
            )
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def label(self) -> str:
        return "my palace" if self.kind == self.Kind.PERSONAL else (self.origin_key or self.name)


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner"
        EDITOR = "editor"
        VIEWER = "viewer"

    class State(models.TextChoices):
        # An owner's invitation is pending and grants nothing (no read, no write, not in any default list, not in
        # row-level security's palaces) until the invited person accepts it; the operator's CLI adds accepted rows.
        PENDING = "pending"
        ACCEPTED = "accepted"

    palace = models.ForeignKey(Palace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    state = models.CharField(max_length=16, choices=State.choices, default=State.ACCEPTED)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["palace", "user"], name="membership_unique")]

    def __str__(self) -> str:
        return f"{self.user} {self.role} in {self.palace}"

    @property
    def can_write(self) -> bool:
        return self.role in {self.Role.OWNER, self.Role.EDITOR}


class OpLog(models.Model):
    """Append-only ledger: one row per mutation, written in the same transaction as the mutation.

    A trigger (migration 0002) refuses UPDATE and DELETE. Tokens are kept by id and label (no foreign key) so the
    lowest layer never depends on the api app.
    """

    class ActorKind(models.TextChoices):
        USER = "user"
        TOKEN = "token"
        SYSTEM = "system"
        # A row copied from another server's history by a lossless import: a read-only record, never revertible;
        # what it said (actor, time, target) is kept in `detail["imported"]`.
        IMPORT = "import"

    op = models.CharField(max_length=64, db_index=True)
    actor_kind = models.CharField(max_length=16, choices=ActorKind.choices)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_token_id = models.BigIntegerField(null=True, blank=True)
    actor_token_label = models.CharField(max_length=200, blank=True)
    actor_name = models.CharField(max_length=200, blank=True)  # a system job's name, or a username snapshot
    palace = models.ForeignKey(Palace, null=True, blank=True, on_delete=models.PROTECT, related_name="oplog")
    target_kind = models.CharField(max_length=32, blank=True)
    target_id = models.BigIntegerField(null=True, blank=True)
    reason = models.TextField(blank=True)
    detail = models.JSONField(default=dict, blank=True)
    request_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [
            models.Index(fields=["palace", "-created_at"], name="oplog_palace_time"),
            models.Index(fields=["target_kind", "target_id"], name="oplog_target"),
        ]

    def __str__(self) -> str:
        return f"{self.op} {self.target_kind}#{self.target_id}"


class Room(models.Model):
    """A room holds memories of one kind, up to a capacity; overflow opens `<name>-2`, `-3`, … ."""

    palace = models.ForeignKey(Palace, on_delete=models.PROTECT, related_name="rooms")
    kind = models.CharField(max_length=16)  # the memory kind it houses: fact, preference, decision, episode, skill
    name = models.CharField(max_length=120)
    ordinal = models.PositiveIntegerField(default=1)  # 1 for "Fact Hall", 2 for "Fact Hall-2", …
    capacity = models.PositiveIntegerField(default=9)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["palace", "name"], name="room_unique_name"),
            models.UniqueConstraint(fields=["palace", "kind", "ordinal"], name="room_unique_ordinal"),
        ]

    def __str__(self) -> str:
        return self.name


class Slot(models.Model):
    """A fixed place in a room. Slots are never recycled: a forgotten memory keeps its slot (the closed wing)."""

    palace = models.ForeignKey(Palace, on_delete=models.PROTECT, related_name="slots")
    room = models.ForeignKey(Room, on_delete=models.PROTECT, related_name="slots")
    number = models.PositiveIntegerField()  # 1..capacity within the room
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["room", "number"], name="slot_unique_number")]

    def __str__(self) -> str:
        return self.coordinate

    @property
    def coordinate(self) -> str:
        return f"{self.room.name}#{self.number}"


class TourStop(models.Model):
    """The fixed tour route: an append-only sequence of slots per palace."""

    palace = models.ForeignKey(Palace, on_delete=models.PROTECT, related_name="tour_stops")
    seq = models.PositiveIntegerField()
    slot = models.OneToOneField(Slot, on_delete=models.PROTECT, related_name="tour_stop")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["palace", "seq"], name="tourstop_unique_seq")]
        ordering = ["palace", "seq"]

    def __str__(self) -> str:
        return f"{self.palace_id}:{self.seq}"


class ProjectRequest(models.Model):
    """A person's request for a project palace, recorded instead of creating it when the operator approves new
    projects (ATRIUM_PROJECT_APPROVAL, palace/approval.py). Approving creates the palace with the requester as its
    owner. No palace column: the row belongs to no palace until one exists (and row-level security covers palaces'
    rows only)."""

    class State(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        DECLINED = "declined"

    origin_key = models.CharField(max_length=400)  # normalised, as Palace.origin_key
    name = models.CharField(max_length=200, blank=True)
    requester = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_requests")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=200, blank=True)  # the deciding actor's name (an admin, a command)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["origin_key", "requester"],
                condition=models.Q(state="pending"),
                name="projectrequest_one_pending",
            )
        ]
        permissions = [("approve_projectrequest", "Can approve or decline requests for new projects")]

    def __str__(self) -> str:
        return f"{self.origin_key} for {self.requester}"
