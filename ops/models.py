"""Operations' own rows: the used marker of each export download link (ops/portability/links.py)."""

from __future__ import annotations

from django.db import models


class ExportLinkUse(models.Model):
    """One export link that has been downloaded, keyed by the random nonce its signed token carries: a link is good
    for one download. Rows older than the links' life are pruned (the signature refuses those links anyway)."""

    nonce = models.CharField(max_length=64, primary_key=True)
    user_id = models.BigIntegerField()  # who downloaded (the link's user); no foreign key: a record, not a relation
    used_at = models.DateTimeField(db_index=True)

    class Meta:
        verbose_name = "export link use"

    def __str__(self) -> str:
        return f"export link {self.nonce[:8]}… used {self.used_at:%Y-%m-%d %H:%M}"
