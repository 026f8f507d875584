"""The model seam's rows move here from the chat app (state only: the tables stay as they are)."""

import django.core.validators
import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('business', '0001_initial'),
        ('copilot', '0003_seed_model_prices'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ModelPrice',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('model_prefix', models.CharField(max_length=100, unique=True, verbose_name='model prefix')),
                        ('input_per_million', models.DecimalField(decimal_places=6, max_digits=12, verbose_name='input USD / 1M tokens')),
                        ('output_per_million', models.DecimalField(decimal_places=6, max_digits=12, verbose_name='output USD / 1M tokens')),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        'db_table': 'copilot_modelprice',
                        'verbose_name': 'model price',
                        'verbose_name_plural': 'model prices',
                        'ordering': ['model_prefix'],
                    },
                ),
                migrations.CreateModel(
                    name='ProviderSettings',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('base_url', models.URLField(blank=True, help_text='Blank: OpenAI. Any OpenAI-compatible server, e.g. http://host:8000/v1.', verbose_name='base URL')),
                        ('api_key_encrypted', models.TextField(blank=True, editable=False, verbose_name='API key (encrypted)')),
                        ('default_model', models.CharField(blank=True, max_length=100, verbose_name='default model')),
                        ('timeout_s', models.FloatField(blank=True, help_text='To connect, and the longest silence between two streamed chunks.', null=True, validators=[django.core.validators.MinValueValidator(0.1)], verbose_name='timeout (seconds)')),
                        ('max_retries', models.PositiveSmallIntegerField(blank=True, help_text='After a rate limit, a server error or a refused connection.', null=True, verbose_name='retries')),
                        ('retry_budget_s', models.FloatField(blank=True, help_text='The most time spent waiting between retries.', null=True, validators=[django.core.validators.MinValueValidator(0)], verbose_name='retry budget (seconds)')),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('organisation', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='provider_settings', to='business.organisation')),
                    ],
                    options={
                        'db_table': 'copilot_providersettings',
                        'verbose_name': 'model provider settings',
                        'verbose_name_plural': 'model provider settings',
                    },
                ),
                migrations.CreateModel(
                    name='ModelCall',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('turn_id', models.CharField(blank=True, db_index=True, max_length=36)),
                        ('agent', models.CharField(blank=True, max_length=40)),
                        ('purpose', models.CharField(choices=[('orchestrator', 'Orchestrator'), ('failsafe', 'Failsafe retry'), ('agent', 'Agent')], max_length=16)),
                        ('model', models.CharField(max_length=100)),
                        ('source', models.CharField(blank=True, max_length=16)),
                        ('tokens_in', models.PositiveIntegerField(default=0)),
                        ('tokens_out', models.PositiveIntegerField(default=0)),
                        ('cost', models.DecimalField(decimal_places=6, default=0, max_digits=12, verbose_name='cost (USD)')),
                        ('latency_ms', models.FloatField(default=0.0)),
                        ('first_token_ms', models.FloatField(blank=True, null=True)),
                        ('ok', models.BooleanField(default=True)),
                        ('error_kind', models.CharField(blank=True, max_length=20)),
                        ('error', models.TextField(blank=True)),
                        ('retries', models.PositiveSmallIntegerField(default=0)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('conversation', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='model_calls', to='copilot.conversation')),
                        ('organisation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to='business.organisation')),
                    ],
                    options={
                        'db_table': 'copilot_modelcall',
                        'ordering': ['created_at', 'pk'],
                        'indexes': [models.Index(fields=['organisation', 'created_at'], name='copilot_mod_organis_018983_idx')],
                    },
                ),
            ],
        ),
    ]
