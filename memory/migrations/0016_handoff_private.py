"""A handoff is private to its person even from the other members of its palace (DESIGN.md), in the database too:
its policies require `user_id` to be the acting user. A viewer's export of a project returned another member's
handoff while the policy looked at the palace only."""

from django.db import migrations

from palace.rls_sql import author_policies, palace_only_policies


class Migration(migrations.Migration):
    dependencies = [("memory", "0015_export_permission")]

    operations = [
        migrations.RunSQL(
            author_policies("memory_handoffversion", "user_id"),
            reverse_sql=palace_only_policies("memory_handoffversion"),
        ),
    ]
