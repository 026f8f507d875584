"""A model call keeps the conversation as a plain id (the chat sits above this package), and the
tables take this app's names."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('copilot', '0004_model_seam_moved_to_llm'),
        ('llm', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The database drops the foreign-key constraint and keeps the column and its data.
            database_operations=[
                migrations.AlterField(
                    model_name='modelcall',
                    name='conversation',
                    field=models.ForeignKey(
                        blank=True, null=True, db_constraint=False,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name='model_calls', to='copilot.conversation',
                    ),
                ),
            ],
            state_operations=[
                migrations.RemoveField(model_name='modelcall', name='conversation'),
                migrations.AddField(
                    model_name='modelcall',
                    name='conversation_id',
                    field=models.BigIntegerField(blank=True, db_index=True, null=True),
                ),
            ],
        ),
        migrations.AlterModelTable(name='providersettings', table=None),
        migrations.AlterModelTable(name='modelprice', table=None),
        migrations.AlterModelTable(name='modelcall', table=None),
    ]
