"""Keep Memory.search_vector in step with Memory.search_text, inside the database.

`memory_search_vector(text)` is the one definition of the full-text vector (see memory/searchtext.py): the part
before U+001F (the memory itself) weighted A, the part after it (its conversational context) weighted D, both
through the `english` configuration (stemming, stop words; CJK text arrives already cut into 2-grams). A trigger
applies it on INSERT and on UPDATE OF search_text, so the write pipeline and bulk loaders (COPY) only set
search_text; a row saved without one falls back to placard + content. Redefine the function in a later migration
and re-run the UPDATE below to change the recipe.
"""

from __future__ import annotations

from django.db import migrations

FORWARD = r"""
CREATE OR REPLACE FUNCTION memory_search_vector(body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT setweight(to_tsvector('english'::regconfig, split_part(coalesce(body, ''), chr(31), 1)), 'A')
        || setweight(to_tsvector('english'::regconfig, split_part(coalesce(body, ''), chr(31), 2)), 'D')
$$;

CREATE OR REPLACE FUNCTION memory_search_vector_sync() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_vector := memory_search_vector(
        coalesce(nullif(NEW.search_text, ''), lower(concat_ws(' ', NEW.placard, NEW.content))));
    RETURN NEW;
END;
$$;

CREATE TRIGGER memory_search_vector_sync
    BEFORE INSERT OR UPDATE OF search_text, content, placard ON memory_memory
    FOR EACH ROW EXECUTE FUNCTION memory_search_vector_sync();

UPDATE memory_memory SET search_text = search_text;
"""

BACKWARD = r"""
DROP TRIGGER IF EXISTS memory_search_vector_sync ON memory_memory;
DROP FUNCTION IF EXISTS memory_search_vector_sync();
DROP FUNCTION IF EXISTS memory_search_vector(text);
"""


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]
    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
