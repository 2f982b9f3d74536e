"""Merging, renaming and alias editing of entities (memory.knowledge.services): what moves, what stays, the op rows, the
clashes refused, and who may do it (owner and editor yes, viewer 403-style, outsider as if absent)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memory.knowledge import entity_aliases_edit, entity_merge, entity_rename, name_key
from memory.models import Entity, Fact, MemoryEntity
from palace.actors import Actor
from palace.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from palace.models import OpLog, Palace
from tests.entity_rows import make_entity
from tests.fakes.memories import make_memory


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("  Alice   Smith ", "alice smith"),
        ("«Ｐｏｓｔｇｒｅｓ»", "postgres"),
        ("@carol,", "@carol"),  # a handle keeps its "@" (memory.knowledge.rules)
        ("Straße", "strasse"),
        ("atrium/core.", "atrium/core"),
        ("王小明。", "王小明"),
        ("...", ""),
    ],
)
def test_key_normalises_like_the_lexicon(raw: str, key: str) -> None:
    assert name_key(raw) == key


def test_merge_moves_links_and_facts_and_keeps_the_tombstone(alice: Any, alice_palace: Palace) -> None:
    shared, only_old, only_new = (make_memory(alice_palace, t) for t in ("both", "old only", "new only"))
    survivor = make_entity(
        alice_palace,
        "Caroline Smith",
        aliases=["Caro"],
        memories=[shared, only_new],
        last_mentioned_at=datetime(2026, 10, 1, tzinfo=UTC),
    )
    merged = make_entity(
        alice_palace,
        "Carol",
        aliases=["caro", "CS"],
        memories=[shared, only_old],
        last_mentioned_at=datetime(2026, 11, 1, tzinfo=UTC),
    )
    older = make_entity(alice_palace, "Carol S.", memories=[])
    Entity.objects.filter(pk=older.pk).update(merged_into=merged)
    fact = Fact.objects.create(palace=alice_palace, entity=merged, content="Carol leads billing")
    other = make_entity(alice_palace, "Dave", memories=[only_old])

    result = entity_merge(entity_id=merged.pk, into_id=survivor.pk, actor=Actor.for_user(alice), reason="same person")

    survivor.refresh_from_db()
    merged.refresh_from_db()
    assert survivor.aliases == ["Caro", "Carol", "CS"]
    assert survivor.alias_keys == ["caro", "carol", "cs"]
    assert survivor.last_mentioned_at == datetime(2026, 11, 1, tzinfo=UTC)
    links = MemoryEntity.objects.filter(entity=survivor)
    assert sorted(link.memory_id for link in links) == sorted([shared.pk, only_old.pk, only_new.pk])
    assert links.get(memory=only_old).source == MemoryEntity.Source.MERGE
    assert not MemoryEntity.objects.filter(entity=merged).exists()
    assert MemoryEntity.objects.filter(entity=other, memory=only_old).exists()  # another entity's link untouched
    assert Fact.objects.get(pk=fact.pk).entity_id == survivor.pk
    assert merged.merged_into_id == survivor.pk and merged.name == "Carol"
    assert Entity.objects.get(pk=older.pk).merged_into_id == survivor.pk
    assert (result.moved_links, result.dropped_links, result.facts) == (1, 1, 1)
    op = OpLog.objects.get(op="entity.merge")
    assert (op.target_id, op.palace_id, op.reason) == (survivor.pk, alice_palace.pk, "same person")
    assert op.detail["merged"] == merged.pk and op.detail["aliases_added"] == ["Carol", "CS"]
    with pytest.raises(Conflict, match="was merged into"):
        entity_rename(entity_id=merged.pk, name="Carol again", actor=Actor.for_user(alice))


def test_merge_refuses_itself_another_palace_and_leaves_nothing_half_done(
    alice: Any, alice_palace: Palace, project: Palace
) -> None:
    a = make_entity(alice_palace, "Postgres", kind="tool")
    b = make_entity(project, "PostgreSQL", kind="tool")
    actor = Actor.for_user(alice)
    with pytest.raises(InvalidInput, match="itself"):
        entity_merge(entity_id=a.pk, into_id=a.pk, actor=actor)
    with pytest.raises(InvalidInput, match="same palace"):
        entity_merge(entity_id=a.pk, into_id=b.pk, actor=actor)
    assert Entity.objects.get(pk=a.pk).merged_into_id is None and not OpLog.objects.filter(op="entity.merge").exists()
    c = make_entity(alice_palace, "pg", kind="tool")
    entity_merge(entity_id=c.pk, into_id=a.pk, actor=actor)  # positive control
    assert Entity.objects.get(pk=c.pk).merged_into_id == a.pk


def test_rename_keeps_the_old_name_as_an_alias_and_refuses_a_clash(alice: Any, alice_palace: Palace) -> None:
    actor = Actor.for_user(alice)
    bob_e = make_entity(alice_palace, "Bob", aliases=["Robert"])
    make_entity(alice_palace, "Robbie", aliases=["Bobby"])
    with pytest.raises(Conflict, match="Robbie"):
        entity_rename(entity_id=bob_e.pk, name="robbie", actor=actor)
    with pytest.raises(Conflict, match="merge the two entities"):
        entity_rename(entity_id=bob_e.pk, name=" BOBBY ", actor=actor)
    with pytest.raises(InvalidInput):
        entity_rename(entity_id=bob_e.pk, name=" ?! ", actor=actor)
    assert not OpLog.objects.filter(op="entity.rename").exists()

    entity_rename(entity_id=bob_e.pk, name="Robert", actor=actor)  # its own alias becomes the name
    bob_e.refresh_from_db()
    assert (bob_e.name, bob_e.key, bob_e.aliases, bob_e.alias_keys) == ("Robert", "robert", ["Bob"], ["bob"])
    op = OpLog.objects.get(op="entity.rename")
    assert op.detail == {"from": "Bob", "to": "Robert"} and op.target_id == bob_e.pk

    entity_rename(entity_id=bob_e.pk, name="ROBERT", actor=actor)  # only the spelling: no new alias
    bob_e.refresh_from_db()
    assert (bob_e.name, bob_e.aliases) == ("ROBERT", ["Bob"])


def test_aliases_add_and_remove_refusing_another_entitys(alice: Any, alice_palace: Palace) -> None:
    actor = Actor.for_user(alice)
    pg = make_entity(alice_palace, "PostgreSQL", kind="tool", aliases=["pg"])
    make_entity(alice_palace, "Redis", kind="tool", aliases=["valkey"])
    with pytest.raises(Conflict, match="Redis"):
        entity_aliases_edit(entity_id=pg.pk, actor=actor, add=["Postgres", "Valkey"])
    with pytest.raises(InvalidInput, match="not one of this entity's aliases"):
        entity_aliases_edit(entity_id=pg.pk, actor=actor, remove=["psql"])
    pg.refresh_from_db()
    assert pg.aliases == ["pg"] and not OpLog.objects.filter(op="entity.aliases").exists()

    entity_aliases_edit(entity_id=pg.pk, actor=actor, add=["Postgres", "postgres!", "postgresql"], remove=["PG"])
    pg.refresh_from_db()
    assert (pg.aliases, pg.alias_keys) == (["Postgres"], ["postgres"])
    op = OpLog.objects.get(op="entity.aliases")
    assert op.detail == {"added": ["Postgres"], "removed": ["pg"]}


def test_viewer_is_refused_outsider_sees_nothing_editor_and_owner_may(
    alice: Any, bob: Any, charlie: Any, project: Palace, system: Actor
) -> None:
    from palace.models import Membership
    from palace.services import member_set

    e = make_entity(project, "Atrium", kind="project")
    with pytest.raises(PermissionDenied):
        entity_rename(entity_id=e.pk, name="Atrium server", actor=Actor.for_user(bob))  # bob is a viewer
    with pytest.raises(NotFound, match="entity not found"):
        entity_aliases_edit(entity_id=e.pk, actor=Actor.for_user(charlie), add=["atrium-core"])
    with pytest.raises(NotFound, match="entity not found"):
        entity_rename(entity_id=e.pk + 1000, name="x", actor=Actor.for_user(alice))
    assert Entity.objects.get(pk=e.pk).name == "Atrium"
    entity_rename(entity_id=e.pk, name="Atrium server", actor=Actor.for_user(alice))  # owner
    member_set(palace=project, user=bob, role=Membership.Role.EDITOR, actor=system)
    entity_aliases_edit(entity_id=e.pk, actor=Actor.for_user(bob), add=["atrium-core"])  # editor
    e.refresh_from_db()
    assert (e.name, e.aliases) == ("Atrium server", ["Atrium", "atrium-core"])
    assert OpLog.objects.get(op="entity.aliases").actor_user_id == bob.pk


def test_merge_into_an_entity_of_a_palace_one_cannot_see_is_not_found(
    alice: Any, charlie: Any, alice_palace: Palace
) -> None:
    theirs = make_entity(Palace.objects.get(personal_owner=charlie), "Secret Project", kind="project")
    mine = make_entity(alice_palace, "Secret Project", kind="project")
    with pytest.raises(NotFound, match="entity not found"):
        entity_merge(entity_id=mine.pk, into_id=theirs.pk, actor=Actor.for_user(alice))
    with pytest.raises(NotFound, match="entity not found"):
        entity_merge(entity_id=theirs.pk, into_id=mine.pk, actor=Actor.for_user(alice))
    assert Entity.objects.filter(merged_into__isnull=False).count() == 0
    other = make_entity(alice_palace, "Secret Proj", kind="project")
    entity_merge(entity_id=other.pk, into_id=mine.pk, actor=Actor.for_user(alice))  # positive control
    assert Entity.objects.get(pk=other.pk).merged_into_id == mine.pk
