"""The model seam's rows: each organisation's endpoint, the price table, one row per model call."""

from __future__ import annotations

from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from business.models import Organisation
from common.secrets import EncryptedText


class ProviderSettings(models.Model):
    """An organisation's own model endpoint. Blank fields take the server's OPENAI_* defaults.

    The API key is kept encrypted (`common.secrets`); with no key here the organisation uses
    the server's environment key, if any, but never with this row's base URL (an organisation
    must not be able to send the platform's key to an address of its choosing).
    """

    organisation = models.OneToOneField(
        Organisation,
        on_delete=models.CASCADE,
        related_name="provider_settings",
        verbose_name=_("organisation"),
    )
    base_url = models.URLField(
        _("base URL"),
        blank=True,
        help_text=_("Blank: OpenAI. Any OpenAI-compatible server, e.g. http://host:8000/v1."),
    )
    api_key_encrypted = models.TextField(_("API key (encrypted)"), blank=True, editable=False)
    api_key = EncryptedText("api_key_encrypted")
    default_model = models.CharField(_("default model"), max_length=100, blank=True)
    timeout_s = models.FloatField(
        _("timeout (seconds)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(0.1)],
        help_text=_("To connect, and the longest silence between two streamed chunks."),
    )
    max_retries = models.PositiveSmallIntegerField(
        _("retries"),
        null=True,
        blank=True,
        help_text=_("After a rate limit, a server error or a refused connection."),
    )
    retry_budget_s = models.FloatField(
        _("retry budget (seconds)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text=_("The most time spent waiting between retries."),
    )
    # What the provider can read besides text (issue 14.5): blank takes the server's
    # OPENAI_VISION_MODEL / OPENAI_TRANSCRIPTION_MODEL, "off" turns it off.
    vision_model = models.CharField(
        _("model for photos"),
        max_length=100,
        blank=True,
        help_text=_(
            'A model that reads images. Blank: the server\'s choice; "off": photos are '
            "stored and the sender is asked for text."
        ),
    )
    transcription_model = models.CharField(
        _("model for voice notes"),
        max_length=100,
        blank=True,
        help_text=_(
            "The provider's /audio/transcriptions model. Blank: the server's choice; "
            '"off": voice notes are stored and the sender is asked for text.'
        ),
    )
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("model provider settings")
        verbose_name_plural = _("model provider settings")

    def __str__(self) -> str:
        return f"{self.organisation} · {self.base_url or 'OpenAI'}"

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key_encrypted)


class ModelPrice(models.Model):
    """USD per million tokens for the models whose name starts with `model_prefix` (the longest
    matching prefix wins, so "gpt-4o-mini" beats "gpt-4o")."""

    model_prefix = models.CharField(_("model prefix"), max_length=100, unique=True)
    input_per_million = models.DecimalField(
        _("input USD / 1M tokens"), max_digits=12, decimal_places=6
    )
    output_per_million = models.DecimalField(
        _("output USD / 1M tokens"), max_digits=12, decimal_places=6
    )
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        ordering = ["model_prefix"]
        verbose_name = _("model price")
        verbose_name_plural = _("model prices")

    def __str__(self) -> str:
        return self.model_prefix


class ModelCall(models.Model):
    """One call to a language model, successful or not: tokens, cost and timing per turn/agent."""

    class Purpose(models.TextChoices):
        ORCHESTRATOR = "orchestrator", _("Orchestrator")
        FAILSAFE = "failsafe", _("Failsafe retry")
        AGENT = "agent", _("Agent")
        VISION = "vision", _("Photo reading")
        TRANSCRIPTION = "transcription", _("Voice transcription")

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, verbose_name=_("organisation")
    )
    # A plain id: the chat sits above this package and owns its conversations.
    conversation_id = models.BigIntegerField(
        null=True, blank=True, db_index=True, verbose_name=_("conversation id")
    )
    turn_id = models.CharField(max_length=36, blank=True, db_index=True, verbose_name=_("turn id"))
    agent = models.CharField(max_length=40, blank=True, verbose_name=_("agent"))
    purpose = models.CharField(max_length=16, choices=Purpose.choices, verbose_name=_("purpose"))
    model = models.CharField(max_length=100, verbose_name=_("model"))
    source = models.CharField(max_length=16, blank=True, verbose_name=_("source"))
    tokens_in = models.PositiveIntegerField(default=0, verbose_name=_("tokens in"))
    tokens_out = models.PositiveIntegerField(default=0, verbose_name=_("tokens out"))
    cost = models.DecimalField(_("cost (USD)"), max_digits=12, decimal_places=6, default=0)
    latency_ms = models.FloatField(default=0.0, verbose_name=_("latency ms"))
    first_token_ms = models.FloatField(null=True, blank=True, verbose_name=_("first token ms"))
    ok = models.BooleanField(default=True, verbose_name=_("ok"))
    error_kind = models.CharField(max_length=20, blank=True, verbose_name=_("error kind"))
    error = models.TextField(blank=True, verbose_name=_("error"))
    retries = models.PositiveSmallIntegerField(default=0, verbose_name=_("retries"))
    # The server reported no usage: the tokens are estimated from the request and the output.
    usage_estimated = models.BooleanField(default=False, verbose_name=_("usage estimated"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("model call")
        verbose_name_plural = _("model calls")
        ordering = ["created_at", "pk"]
        indexes = [models.Index(fields=["organisation", "created_at"])]
