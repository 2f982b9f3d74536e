"""The derived texts a memory is found by: one for the full-text arm, one for the vector arm.

The write pipeline calls :func:`build_search_text` and :func:`build_embedding_text` and stores/embeds what they
return; retrieval (memory/search/search.py) relies on both being built the same way for every row.

Full text
    ``Memory.search_text`` holds two sections separated by :data:`CONTEXT_SEPARATOR` (U+001F): the memory itself
    (placard, speaker, content, the date it happened) and its conversational context (the previous turn of the same
    source session). A database trigger (migration ``memory/0002_search_vector_trigger``) keeps
    ``Memory.search_vector`` in step with ``search_text`` on every INSERT and every UPDATE OF search_text:
    ``setweight(to_tsvector('english', main), 'A') || setweight(to_tsvector('english', context), 'D')``,
    so the pipeline (and bulk loaders using COPY) only set ``search_text``. The context section is weighted D so a
    turn matches on its neighbour's words, but ranks below a turn that says them itself.
    CJK runs are cut into overlapping 2-grams by :func:`memory.text.textproc.search_text_cjk`; English words are
    stemmed by the ``english`` configuration (stop words dropped). The query side must use
    :func:`query_lexemes_sql`, which cuts the same way.

Embedding
    ``build_embedding_text`` gives the passage the embedder sees: the content, with the placard in front when there
    is one. Not the speaker: on LoCoMo dev a small embedding model let names dominate similarity (every question
    naming Caroline looked like every turn saying "Caroline"); the search strips known people from the query for
    the vector arm and favours the named person's memories with an explicit speaker cue instead. The speaker and
    the date do go into the full-text side, where a name or a month is an exact, cheap match.
"""

from __future__ import annotations

from datetime import datetime

from memory.text.textproc import query_text_cjk, search_text_cjk

__all__ = [
    "CONTEXT_SEPARATOR",
    "TS_CONFIG",
    "build_embedding_text",
    "build_search_text",
    "date_words",
    "query_lexemes_sql",
    "search_vector_sql",
]

# The text-search configuration on both sides. Changing it needs a migration that redefines
# memory_search_vector() and re-runs it over stored rows.
TS_CONFIG = "english"
# U+001F (unit separator): never typed by people, and PostgreSQL's parser treats it as a blank.
CONTEXT_SEPARATOR = "\x1f"
# How much of the previous turn to keep as context (characters): enough for a sentence or two.
CONTEXT_CHARS = 600


def date_words(moment: datetime | None) -> str:
    """ "8 May 2023" for a datetime: words a question may use ("in May 2023"); "" for None."""
    if moment is None:
        return ""
    return f"{moment.day} {moment.strftime('%B')} {moment.year}"


def _clean(text: str) -> str:
    return " ".join(text.replace("\x00", " ").replace(CONTEXT_SEPARATOR, " ").split())


def build_search_text(
    *,
    content: str,
    placard: str = "",
    speaker: str = "",
    occurred_at: datetime | None = None,
    context: str = "",
) -> str:
    """The text stored in ``Memory.search_text`` (the trigger turns it into ``search_vector``).

    ``context`` is the content of the previous memory of the same source session ("" when there is none).
    """
    main = " ".join(
        part for part in (_clean(placard), _clean(speaker), _clean(content), date_words(occurred_at)) if part
    )
    text = search_text_cjk(main)
    context = _clean(context)[:CONTEXT_CHARS]
    if context:
        text += CONTEXT_SEPARATOR + search_text_cjk(context)
    return text


def build_embedding_text(
    *,
    content: str,
    placard: str = "",
    speaker: str = "",
    occurred_at: datetime | None = None,
    context: str = "",
) -> str:
    """The passage text the write pipeline embeds for the vector arm: the content, with the placard in front.

    The speaker, the date and the context are left out on purpose (measured on LoCoMo dev, see the module
    docstring): they are accepted so the pipeline passes the same arguments to both builders.
    """
    body = _clean(content)
    if placard and _clean(placard) not in body:
        body = f"{_clean(placard)}. {body}"
    return body


def search_vector_sql(param: str = "%s") -> str:
    """SQL for the tsvector of a search text, exactly as the trigger computes it (for bulk loaders and checks)."""
    return f"memory_search_vector({param})"


def query_lexemes_sql(param: str = "%s") -> str:
    """SQL for the query's lexemes as a text[], cut and stemmed exactly like stored text.

    Retrieval ORs them (an AND query starves on natural-language questions: every content word must occur in one
    memory) and decides which of them may bring candidates (memory.search). ``param`` must receive
    :func:`query_text` output.
    """
    return f"tsvector_to_array(to_tsvector('{TS_CONFIG}'::regconfig, {param}))"


def query_text(query: str) -> str:
    """The query as the lexical arm reads it: cut like stored text (CJK 2-grams, NFKC, lower case)."""
    return query_text_cjk(_clean(query))
