"""A partial index for the people a palace's memories were said by (memory.search reads them for the speaker cue).

`SELECT DISTINCT speaker … WHERE palace_id = ANY(…) AND speaker <> ''` stays an index-only scan over the few rows
that have a speaker, instead of a walk over every memory of a large palace. Raw SQL (not Meta.indexes) because
the model file belongs to the schema, not to retrieval; the index changes no model state.
"""

from __future__ import annotations

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memory", "0003_periodic_jobs")]
    operations = [
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS memory_palace_speaker ON memory_memory (palace_id, speaker)"
            " WHERE speaker <> ''",
            "DROP INDEX IF EXISTS memory_palace_speaker",
        )
    ]
