"""ApiToken, moved here from the `api` app. State only: `api.0001_initial` created the table `api_apitoken`, which
the model keeps (Meta.db_table); `api.0002` then drops the model from the `api` app's state.

The admin's content type for tokens is renamed from api to accounts, so permissions already granted on tokens (and
admin log entries about them) keep pointing at the model."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def rename_content_type(apps, schema_editor, *, old="api", new="accounts"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    if not ContentType.objects.using(db).filter(app_label=new, model="apitoken").exists():
        ContentType.objects.using(db).filter(app_label=old, model="apitoken").update(app_label=new)


def rename_content_type_back(apps, schema_editor):
    rename_content_type(apps, schema_editor, old="accounts", new="api")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("api", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ApiToken",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("label", models.CharField(max_length=100)),
                        ("prefix", models.CharField(max_length=16)),
                        ("key_hash", models.CharField(max_length=64, unique=True)),
                        ("scope", models.CharField(choices=[("read", "Read"), ("write", "Write")], default="write", max_length=8)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        ("expires_at", models.DateTimeField(blank=True, null=True)),
                        ("revoked_at", models.DateTimeField(blank=True, null=True)),
                        ("user", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="api_tokens", to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        "db_table": "api_apitoken",
                        "ordering": ["-created_at"],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(rename_content_type, rename_content_type_back),
    ]
