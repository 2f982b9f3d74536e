"""What comes in without "remember this": the turns of agents' sessions (live capture and backfill), each stored once
under its idempotency key (user, session, turn index), and the backfill runs that import past sessions.

These rows are one person's: row-level security (migration 0002) shows a session, its turns and a backfill run only
to the user who sent them (and to the system: the worker, the admin). Turn text is stored after the anti-echo scrub
and redaction (capture/services.py), so no raw secret is at rest; a tool turn keeps only the tool's name.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from palace.models import Palace


class BackfillRun(models.Model):
    """One import of past sessions: its rules, the zero-cost estimate, its progress counts and its state. The job
    that runs it reads `pause_requested` between sessions."""

    class State(models.TextChoices):
        ESTIMATED = "estimated"
        QUEUED = "queued"
        RUNNING = "running"
        PAUSED = "paused"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    state = models.CharField(max_length=16, choices=State.choices, default=State.ESTIMATED)
    rules = models.JSONField(default=dict, blank=True)
    estimate = models.JSONField(default=dict, blank=True)
    # turns_total, turns_done, memories, facts, episodes, skipped {reason: n}
    counts = models.JSONField(default=dict, blank=True)
    pause_requested = models.BooleanField(default=False)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    files = models.JSONField(default=list, blank=True)  # the names of the transcripts, never their content
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["user", "-created_at"], name="capture_backfill_user_time")]

    def __str__(self) -> str:
        return f"backfill run #{self.pk} ({self.state})"


class CaptureSession(models.Model):
    """One agent session of one user, keyed by the client's session id; its turns go to `palace`."""

    class Mode(models.TextChoices):
        LIGHT = "light"  # user turns only
        EAGER = "eager"  # assistant turns too
        OFF = "off"  # nothing stored

    class Source(models.TextChoices):
        CAPTURE = "capture"
        BACKFILL = "backfill"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    palace = models.ForeignKey(Palace, on_delete=models.PROTECT, related_name="capture_sessions")
    key = models.CharField(max_length=200)  # the client's session id
    client = models.CharField(max_length=64, blank=True)  # claude-code, codex, openai, generic, ...
    origin = models.CharField(max_length=400, blank=True)  # the git origin as sent, normalised when it is one
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.LIGHT)
    cwd = models.CharField(max_length=1000, blank=True)
    # How the palace was chosen ("project" | "personal") and why, as the capture answer said it.
    routed_by = models.CharField(max_length=16, blank=True)
    routing_reason = models.CharField(max_length=300, blank=True)
    # The token the turns came through (by id and label, like the op log: no foreign key), so the memories the
    # worker saves carry the same provenance a direct save would.
    token_id = models.BigIntegerField(null=True, blank=True)
    token_label = models.CharField(max_length=100, blank=True)
    summary = models.TextField(blank=True)
    summary_method = models.CharField(max_length=8, blank=True)  # llm | rules
    summary_fallback = models.CharField(max_length=200, blank=True)  # why the rules summarised (model down, ...)
    summary_turns = models.PositiveIntegerField(default=0)  # how many done user turns the summary covers
    started_at = models.DateTimeField(null=True, blank=True)
    last_turn_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.CAPTURE)
    backfill_run = models.ForeignKey(
        BackfillRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="sessions"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="capture_session_user_key")]
        indexes = [models.Index(fields=["palace", "-last_turn_at"], name="capture_session_palace_time")]

    def __str__(self) -> str:
        return f"capture session #{self.pk} ({self.client or 'client?'})"


class CaptureTurn(models.Model):
    """One turn of a session, stored once: (session, index) is unique, so a resend stores nothing new."""

    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"
        TOOL = "tool"

    class State(models.TextChoices):
        PENDING = "pending"  # stored, not yet extracted (or a failed attempt to replay)
        DONE = "done"
        SKIPPED = "skipped"  # nothing to keep (a tool turn, an assistant turn in light mode, empty text)
        FAILED = "failed"  # gave up after ATRIUM_CAPTURE_MAX_ATTEMPTS

    session = models.ForeignKey(CaptureSession, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    text = models.TextField(blank=True)  # scrubbed of echoes and redacted; empty for a tool turn
    tool = models.CharField(max_length=200, blank=True)
    at = models.DateTimeField(null=True, blank=True)
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    method = models.CharField(max_length=8, blank=True)  # rules | llm
    fallback_reason = models.CharField(max_length=200, blank=True)
    memory_ids = models.JSONField(default=list, blank=True)
    redactions = models.JSONField(default=list, blank=True)  # the kinds scrubbed from the text, never the values
    echoes = models.JSONField(default=list, blank=True)  # the recall tools whose output was replaced
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.CharField(max_length=500, blank=True)  # the last failed attempt, for the admin
    processed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "index"], name="capture_turn_session_index")]
        indexes = [
            # The worker's and the replay's question: which turns are still pending, in order.
            models.Index(fields=["session", "index"], name="capture_turn_pending", condition=models.Q(state="pending")),
        ]

    def __str__(self) -> str:
        return f"turn {self.index} of session {self.session_id} ({self.role}, {self.state})"
