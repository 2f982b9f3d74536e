"""The knowledge layer: the entities memories mention (found by rules, rules.py, or a chat model,
extraction.py; resolved and linked, linking.py; the people named in a query, people.py), edits of entities
(services.py) and their reads (selectors.py), and facts about them on two time axes (facts.py)."""

from __future__ import annotations

from memory.knowledge.extraction import (
    EntityTag,
    Extraction,
    Linked,
    Mention,
    Note,
    entities_extract,
    entities_extract_many,
    entities_for_memories,
    entity_cues,
    stated_entities,
)
from memory.knowledge.facts import (
    MAX_FACTS,
    FactsQueryResult,
    FactsWriteResult,
    FactView,
    facts_for_memories,
    facts_query,
    facts_write,
)
from memory.knowledge.linking import entities_link, entities_link_many
from memory.knowledge.people import known_people, people_named, speakers, without_names
from memory.knowledge.rules import RuleMention, name_key, normalise, rule_mentions
from memory.knowledge.selectors import entity_get, entity_kinds, entity_list, entity_memories
from memory.knowledge.services import MergeResult, entity_aliases_edit, entity_kind_set, entity_merge, entity_rename

__all__ = [
    "MAX_FACTS",
    "EntityTag",
    "Extraction",
    "FactView",
    "FactsQueryResult",
    "FactsWriteResult",
    "Linked",
    "Mention",
    "MergeResult",
    "Note",
    "RuleMention",
    "entities_extract",
    "entities_extract_many",
    "entities_for_memories",
    "entities_link",
    "entities_link_many",
    "entity_aliases_edit",
    "entity_cues",
    "entity_get",
    "entity_kind_set",
    "entity_kinds",
    "entity_list",
    "entity_memories",
    "entity_merge",
    "entity_rename",
    "facts_for_memories",
    "facts_query",
    "facts_write",
    "known_people",
    "name_key",
    "normalise",
    "people_named",
    "rule_mentions",
    "speakers",
    "stated_entities",
    "without_names",
]
