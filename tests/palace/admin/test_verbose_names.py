"""Every model's plural is spelled right in the admin (issue 26: "Memorys"): Django's default adds an "s", which is
wrong after a consonant + y, s, x, ch or sh; such a model must say its plural."""

from __future__ import annotations

import re
from typing import Any

from django.apps import apps

OURS = {"palace", "accounts", "memory", "review", "capture", "ops"}
NAIVE = re.compile(r"([^aeiou]ys|ss|xs|chs|shs)$")


def misspelt_plurals() -> list[str]:
    return [
        f"{m._meta.label}: {m._meta.verbose_name_plural}"
        for m in apps.get_models()
        if m._meta.app_label in OURS and NAIVE.search(str(m._meta.verbose_name_plural))
    ]


def test_no_model_has_a_naive_plural() -> None:
    assert misspelt_plurals() == []
    assert NAIVE.search("memorys") and NAIVE.search("search batchs") and not NAIVE.search("memories")  # the rule


def test_the_admin_index_says_memories(admin_client: Any) -> None:
    page = admin_client.get("/admin/").content.decode()
    assert "Memories" in page and "Memorys" not in page and "Search batches" in page
