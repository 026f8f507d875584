"""Starting prices (USD per million tokens) for common OpenAI models, as published when this was
written. They are only a starting point: edit them in the admin (Model prices) when the vendor's
prices change or to add the models you run; a model with no matching prefix costs 0."""

from decimal import Decimal

from django.db import migrations

PRICES = {
    # prefix: (input, output)
    "gpt-4o": ("2.50", "10.00"),
    "gpt-4o-mini": ("0.15", "0.60"),
    "gpt-4.1": ("2.00", "8.00"),
    "gpt-4.1-mini": ("0.40", "1.60"),
    "gpt-4.1-nano": ("0.10", "0.40"),
    "gpt-5": ("1.25", "10.00"),
    "gpt-5-mini": ("0.25", "2.00"),
    "gpt-5-nano": ("0.05", "0.40"),
    "o4-mini": ("1.10", "4.40"),
}


def seed(apps, schema_editor):
    ModelPrice = apps.get_model("copilot", "ModelPrice")
    for prefix, (prompt, completion) in PRICES.items():
        ModelPrice.objects.get_or_create(
            model_prefix=prefix,
            defaults={
                "input_per_million": Decimal(prompt),
                "output_per_million": Decimal(completion),
            },
        )


class Migration(migrations.Migration):
    dependencies = [("copilot", "0002_llm_provider_prices_calls")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
