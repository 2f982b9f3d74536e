"""ApiToken now lives in the `accounts` app. State only: the table `api_apitoken` stays where it is (the model keeps
that name with Meta.db_table), so no row moves and nothing is locked."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("api", "0001_initial"),
        ("accounts", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ApiToken")],
            database_operations=[],
        ),
    ]
