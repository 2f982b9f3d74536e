"""memory.text.searchtext: the derived texts, and the database trigger that turns search_text into search_vector."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db import connection

from memory.models import Memory
from memory.text.searchtext import (
    CONTEXT_SEPARATOR,
    build_embedding_text,
    build_search_text,
    date_words,
    query_lexemes_sql,
    query_text,
    search_vector_sql,
)
from palace.models import Palace

WHEN = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def test_search_text_holds_placard_speaker_content_and_date() -> None:
    text = build_search_text(
        content="I went to a support group yesterday", placard="Support group", speaker="Caroline", occurred_at=WHEN
    )

    assert text == "support group caroline i went to a support group yesterday 8 may 2023"


def test_context_goes_after_the_separator() -> None:
    text = build_search_text(content="Sounds great!", speaker="Mel", context="We adopted a puppy called Biscuit")

    main, context = text.split(CONTEXT_SEPARATOR)
    assert main == "mel sounds great!"
    assert context == "we adopted a puppy called biscuit"


def test_chinese_is_cut_into_bigrams_and_the_separator_cannot_be_forged() -> None:
    text = build_search_text(content=f"我喜欢喝茶{CONTEXT_SEPARATOR}x")

    assert text == "我喜 喜欢 欢喝 喝茶 x"
    assert CONTEXT_SEPARATOR not in text


def test_embedding_text_is_the_content_with_its_placard() -> None:
    assert build_embedding_text(content="I love hiking", speaker="Jon", occurred_at=WHEN) == "I love hiking"
    assert build_embedding_text(content="Use uv", placard="Tooling") == "Tooling. Use uv"
    assert build_embedding_text(content="  spaced \x00 out ") == "spaced out"


def test_date_words() -> None:
    assert date_words(WHEN) == "8 May 2023"
    assert date_words(None) == ""


def _vector(sql: str, *params: Any) -> str:
    with connection.cursor() as cursor:
        cursor.execute(sql, list(params))
        return str(cursor.fetchone()[0])


def test_trigger_builds_weighted_vector_from_search_text(db: Any, alice: Any) -> None:
    palace = Palace.objects.get(personal_owner=alice)
    text = build_search_text(content="Deploying on Fridays", speaker="Ana", context="what about releases")
    memory = Memory.objects.create(palace=palace, kind="fact", content="Deploying on Fridays", search_text=text)
    memory.refresh_from_db()

    assert memory.search_vector == "'ana':1A 'deploy':2A 'friday':4A 'releas':7"
    assert _vector(f"SELECT {search_vector_sql()}::text", text) == memory.search_vector


def test_trigger_follows_updates_and_falls_back_to_content(db: Any, alice: Any) -> None:
    palace = Palace.objects.get(personal_owner=alice)
    memory = Memory.objects.create(palace=palace, kind="fact", content="Tabs over spaces", placard="Indentation")
    memory.refresh_from_db()
    assert memory.search_vector == "'indent':1A 'space':4A 'tab':2A"

    Memory.objects.filter(pk=memory.pk).update(search_text=build_search_text(content="Spaces now"))
    memory.refresh_from_db()
    assert memory.search_vector == "'space':1A"


def _lexemes(query: str) -> set[str]:
    # As the lexical arm's tsquery prints them: quoted lexemes joined by " | ".
    sql = f"SELECT coalesce((SELECT string_agg(quote_literal(x), ' | ') FROM unnest({query_lexemes_sql()}) x), '')"
    return set(_vector(sql, query_text(query)).split(" | ")) - {""}


def test_query_side_is_an_or_of_stemmed_lexemes(db: Any) -> None:
    assert _lexemes("When did the releases happen?") == {"'releas'", "'happen'"}
    assert _lexemes("谁负责回滚") == {"'谁负'", "'负责'", "'责回'", "'回滚'"}
    assert _lexemes("the of and") == set()
