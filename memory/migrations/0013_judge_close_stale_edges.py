"""Close the contradictions left pending about a memory that was already corrected or forgotten before correcting
and forgetting closed them (issue 13), so Today's open count starts true. Each close writes an op row, as
memory.edges does."""

from typing import Any

from django.db import migrations
from django.db.models import Q

GONE = ("forgotten", "superseded")


def close_stale(apps: Any, schema_editor: Any) -> None:
    # Row-level security hides every palace's rows from a connection with no acting context: this upgrade acts as
    # the system, for this migration's transaction only.
    schema_editor.execute("SELECT set_config('atrium.system', 'migration:memory.0013', true)")
    Edge = apps.get_model("memory", "Edge")
    OpLog = apps.get_model("palace", "OpLog")
    stale = Edge.objects.filter(kind="contradicts", status="pending").filter(
        Q(from_memory__status__in=GONE) | Q(to_memory__status__in=GONE)
    )
    for edge in stale.select_related("from_memory", "to_memory"):
        gone = edge.from_memory if edge.from_memory.status in GONE else edge.to_memory
        resolution = "forgotten" if gone.status == "forgotten" else "corrected"
        reason = f"closed at upgrade: #{gone.pk} was already {gone.status}"
        edge.status, edge.resolution, edge.resolution_reason = "closed", resolution, reason
        edge.save(update_fields=["status", "resolution", "resolution_reason"])
        OpLog.objects.create(
            op="edge.close",
            actor_kind="system",
            actor_name="migration memory.0013",
            palace_id=edge.palace_id,
            target_kind="edge",
            target_id=edge.pk,
            reason=reason,
            detail={"resolution": resolution, "memory": gone.pk, "from": edge.from_memory_id, "to": edge.to_memory_id},
        )


class Migration(migrations.Migration):
    dependencies = [("memory", "0012_judge"), ("palace", "0004_row_level_security")]

    operations = [migrations.RunPython(close_stale, migrations.RunPython.noop)]
