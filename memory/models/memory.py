"""The content of a palace: memories, the edges between them, and the record of retrievals."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models.functions import Cast
from django.utils import timezone
from pgvector.django import HalfVectorField, HnswIndex, VectorField

from palace.kinds import MemoryKind
from palace.models import Palace, Slot

EMBEDDING_DIM = 384
# The nearest-neighbour order the HNSW index serves (see Memory.Meta.indexes): the half-precision cosine distance of
# `m.embedding` to a vector parameter. Order by exactly this to use the index; judge by the exact distance.
HALF_DISTANCE = f"m.embedding::halfvec({EMBEDDING_DIM}) <=> %s::halfvec({EMBEDDING_DIM})"


def vector_literal(vector: Any) -> str:
    """A vector as pgvector's text input ('[0.1,0.2,...]'), for raw SQL parameters."""
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"


class Memory(models.Model):
    Kind = MemoryKind  # the five kinds, defined once in palace.kinds

    class Status(models.TextChoices):
        ACTIVE = "active"
        ARCHIVED = "archived"
        FORGOTTEN = "forgotten"
        SUPERSEDED = "superseded"

    class Source(models.TextChoices):
        MCP = "mcp"
        REST = "rest"
        PANEL = "panel"
        CAPTURE = "capture"
        BACKFILL = "backfill"
        IMPORT = "import"
        DISTILL = "distill"
        EVAL = "eval"

    palace = models.ForeignKey(Palace, on_delete=models.PROTECT, related_name="memories")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    content = models.TextField()
    placard = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    confidence = models.FloatField(default=0.7)
    importance = models.FloatField(default=0.5)
    hit_count = models.PositiveIntegerField(default=0)
    last_accessed_at = models.DateTimeField(null=True, blank=True)
    occurred_at = models.DateTimeField(default=timezone.now)  # world time: when it happened
    created_at = models.DateTimeField(default=timezone.now)  # server time: when Atrium learned it
    updated_at = models.DateTimeField(auto_now=True)
    version = models.PositiveIntegerField(default=1)  # optimistic lock for corrections
    supersedes = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="superseded_by"
    )
    # Provenance, stamped by the server. `sources` keeps every source a merged memory absorbed.
    source_kind = models.CharField(max_length=16, choices=Source.choices, default=Source.REST)
    source_session = models.CharField(max_length=200, blank=True)
    source_turn = models.CharField(max_length=100, blank=True)
    source_seq = models.BigIntegerField(null=True, blank=True)
    sources = models.JSONField(default=list, blank=True)
    speaker = models.CharField(max_length=120, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by_token_id = models.BigIntegerField(null=True, blank=True)
    redactions = models.JSONField(default=list, blank=True)  # kinds scrubbed, never the values
    epitaph = models.TextField(blank=True)  # why it was forgotten or archived
    # Retrieval: the derived texts, the full-text vector and the embedding (null when the embedder was down).
    search_text = models.TextField(blank=True)
    search_vector = SearchVectorField(null=True, blank=True)
    embedding = VectorField(dimensions=EMBEDDING_DIM, null=True, blank=True)
    embedding_model = models.CharField(max_length=100, blank=True)
    meta = models.JSONField(default=dict, blank=True)
    slot = models.ForeignKey(Slot, null=True, blank=True, on_delete=models.PROTECT, related_name="memories")
    review_enrolled = models.BooleanField(default=False)

    class Meta:
        verbose_name_plural = "memories"  # Django's default adds an "s": "Memorys" in the admin (issue 26)
        # Admin rights beyond view (memory/admin/memories.py says who sees what).
        permissions = [
            ("view_memory_body", "Can see memory bodies in the admin"),
            ("forget_memory", "Can forget memories in the admin"),
            ("restore_memory", "Can restore memories in the admin"),
            ("export_memory", "Can export memories (their bodies leave the server)"),
        ]
        indexes = [
            models.Index(fields=["palace", "status", "-created_at"], name="memory_palace_status_time"),
            models.Index(fields=["palace", "kind", "status"], name="memory_palace_kind"),
            models.Index(fields=["palace", "occurred_at"], name="memory_palace_occurred"),
            models.Index(fields=["palace", "source_session", "source_turn"], name="memory_source"),
            # The review queue and the due badge (review.selectors): active memories enrolled for review.
            models.Index(
                fields=["palace", "created_at"],
                name="memory_review_enrolled",
                condition=models.Q(review_enrolled=True, status="active"),
            ),
            # The refurb scan reads every active memory's placard and room: from this index alone (an index-only
            # scan, 7 ms at 10,000 memories), not from heap pages scattered among other palaces' rows (18 ms warm,
            # 120 ms cold).
            models.Index(
                fields=["palace"],
                include=["id", "slot", "placard"],
                name="memory_active_placards",
                condition=models.Q(status="active"),
            ),
            GinIndex(fields=["search_vector"], name="memory_search_gin"),
            # Over the half-precision cast of the vector: half the size (167 MB instead of 293 MB at 150k rows)
            # and measured ~35 % faster to search; queries order by the same cast (memory.search, the write
            # pipeline's neighbours) and compute the exact cosine from the stored full-precision vector. The graph
            # is denser than pgvector's default (memory 0021): on 100,000 real embeddings recall@10 is 0.98-0.99
            # instead of 0.95-0.96 at ef_search 200 (the arm's widest by default), for a build 2.7 times as long
            # (README, "Recall on real embeddings").
            HnswIndex(
                OpClass(Cast("embedding", HalfVectorField(dimensions=EMBEDDING_DIM)), name="halfvec_cosine_ops"),
                name="memory_embedding_hnsw",
                m=24,
                ef_construction=128,
            ),
        ]
        constraints = [
            models.CheckConstraint(
                name="memory_confidence_range", condition=models.Q(confidence__gte=0) & models.Q(confidence__lte=1)
            ),
            models.CheckConstraint(
                name="memory_importance_range", condition=models.Q(importance__gte=0) & models.Q(importance__lte=1)
            ),
        ]

    def __str__(self) -> str:
        # No content: the admin prints this in titles, breadcrumbs, raw-id widgets and its action log, where the
        # body needs its own permission (memory/admin/memories.py).
        return f"#{self.pk} {self.kind}"


class Edge(models.Model):
    class Kind(models.TextChoices):
        CONTRADICTS = "contradicts"
        SUPPORTS = "supports"
        REFINES = "refines"
        RELATED = "related"
        SUPERSEDES = "supersedes"
        DERIVED_FROM = "derived_from"
        NEXT = "next"  # conversational order: the turn that followed in the same session

    class Status(models.TextChoices):
        PENDING = "pending"
        CONFIRMED = "confirmed"
        DISMISSED = "dismissed"
        CLOSED = "closed"  # one side was corrected or forgotten (memory.lifecycle.edges)

    palace = models.ForeignKey(Palace, on_delete=models.PROTECT, related_name="edges")
    from_memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="edges_out")
    to_memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="edges_in")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, blank=True)  # contradictions only
    weight = models.FloatField(default=1.0)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    # How a contradiction was settled (memory.lifecycle.edges): keep_newer | keep_older | both_stand | merge |
    # corrected | forgotten, and the reason given.
    resolution = models.CharField(max_length=16, blank=True)
    resolution_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["from_memory", "to_memory", "kind"], name="edge_unique"),
        ]
        indexes = [
            models.Index(fields=["to_memory", "kind"], name="edge_to_kind"),
            models.Index(fields=["palace", "kind", "status"], name="edge_palace_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.from_memory_id} -{self.kind}-> {self.to_memory_id}"


class AccessRecord(models.Model):
    """A retrieval: which memory was returned to whom, at which rank. Not a mutation, so not on the op log."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="accesses")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    token_id = models.BigIntegerField(null=True, blank=True)
    batch = models.CharField(max_length=40, blank=True)
    rank = models.PositiveIntegerField(default=0)
    via = models.CharField(max_length=16, blank=True)  # search, examine, review, profile
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["memory", "-created_at"], name="access_memory_time")]

    def __str__(self) -> str:
        return f"memory {self.memory_id} returned at rank {self.rank}"


class SearchBatch(models.Model):
    """A server-minted handle for one search's results, bound to the user; `assess` may cite only its refs."""

    handle = models.CharField(max_length=40, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    query = models.TextField()
    refs = models.JSONField(default=dict)  # ref -> memory id
    palace_ids = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    assessed = models.BooleanField(default=False)

    class Meta:
        verbose_name_plural = "search batches"

    def __str__(self) -> str:
        return self.handle


class DistillProposal(models.Model):
    """A cluster the scheduled distillation (suggest mode) proposes to merge into one rule, kept for a person to
    apply (the same code as `memory_distill apply`) or reject. An undone distillation is kept as a rejected
    proposal of its members, so the next run does not propose (or apply) it again."""

    class Status(models.TextChoices):
        PENDING = "pending"
        APPLIED = "applied"
        REJECTED = "rejected"

    palace = models.ForeignKey(Palace, on_delete=models.PROTECT, related_name="distill_proposals")
    kind = models.CharField(max_length=16, choices=MemoryKind.choices)
    member_ids = models.JSONField(default=list)  # sorted memory ids, oldest first as clustered
    content = models.TextField()  # the proposed rule (a preview: applying writes it again, by the LLM if configured)
    placard = models.CharField(max_length=200, blank=True)
    producer = models.CharField(max_length=16)  # "llm" or "rules": what wrote the proposed text
    fallback = models.CharField(max_length=300, blank=True)  # why the LLM did not write it ("" when it did)
    min_similarity = models.FloatField(default=0.0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    rule = models.ForeignKey(Memory, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.CharField(max_length=500, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["palace", "status", "-created_at"], name="distill_proposal_status")]

    def __str__(self) -> str:
        return f"proposal #{self.pk} ({self.status}): merge {self.member_ids}"


class DistillJob(models.Model):
    """One `memory_distill` run asked for through a door (MCP, REST), done by a Celery worker: clustering is
    quadratic in a palace's memories, too heavy for a request thread. The door answers at once with the job's id and
    state; the worker fills in the result (memory.jobs.distill_job). Private to the person who started it, in the
    database too (its row-level security policies require `user_id` to be the acting user, memory 0017)."""

    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    palace = models.ForeignKey(Palace, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    token_id = models.BigIntegerField(null=True, blank=True)  # the token it came through (a record, as op rows keep)
    token_label = models.CharField(max_length=100, blank=True)
    mode = models.CharField(max_length=8)  # "suggest" (a preview, nothing changes) or "apply"
    state = models.CharField(max_length=8, choices=State.choices, default=State.QUEUED)
    result = models.JSONField(default=dict, blank=True)  # the run's clusters, once done
    error = models.CharField(max_length=300, blank=True)  # why it failed (an error class and message, no body)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["user", "-created_at"], name="distill_job_user")]

    def __str__(self) -> str:
        return f"distill job #{self.pk} ({self.mode}, {self.state})"
