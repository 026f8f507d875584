"""Provider settings, prices and model calls now belong to the `llm` app (state only)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('copilot', '0003_seed_model_prices'),
        ('llm', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='ModelCall'),
                migrations.DeleteModel(name='ProviderSettings'),
                migrations.DeleteModel(name='ModelPrice'),
            ],
        ),
    ]
