"""Which model endpoint an organisation talks to, and the engine it effectively runs.

Precedence: the organisation's own settings when they hold an API key; else the server's
environment (OPENAI_API_KEY and friends); else none, and the organisation runs embedded. An
organisation without its own key may still tune the model and timeouts, but the environment key
only ever goes to the environment's base URL.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from django.conf import settings

from business.models import Organisation
from common.kept import Kept
from llm.models import ProviderSettings


@dataclass(frozen=True)
class Provider:
    base_url: str  # "" = the SDK default (OpenAI)
    api_key: str
    default_model: str
    timeout_s: float  # connect, and the longest silence between two chunks
    max_retries: int  # 429 / 5xx / connection refused, before any output was delivered
    retry_budget_s: float  # total seconds we may wait (Retry-After honoured within it)
    source: str  # "organisation" | "environment" | "command line" (evaluate's overrides)
    max_tokens: int = 1024  # the most tokens one call may write
    deadline_s: float = 60.0  # the most seconds one call may take, streaming included
    vision_model: str = ""  # the model that reads photos; "" = photos are not read
    transcription_model: str = ""  # the /audio/transcriptions model; "" = none

    def __repr__(self) -> str:  # never print the key (logs, tracebacks, the trace)
        return (
            f"Provider(base_url={self.base_url!r}, model={self.default_model!r}, "
            f"source={self.source!r}, key={'set' if self.api_key else 'none'})"
        )


def _seconds() -> float:
    return float(getattr(settings, "PROVIDER_CACHE_SECONDS", 5.0))


# An organisation's provider row (or None: most have none), kept between turns (issue 26.5)
# like its agents (agents/cache.py): a save or delete in this process drops it at once (signals
# in llm/apps.py); it is read again after PROVIDER_CACHE_SECONDS (5 s) for what other processes
# saved; 0 reads it on every call (the tests' default).
_kept: Kept[ProviderSettings | None] = Kept(_seconds)


def _organisation_settings(organisation: Organisation) -> ProviderSettings | None:
    return _kept.get(
        organisation.pk, lambda: ProviderSettings.objects.filter(organisation=organisation).first()
    )


def forget(organisation_id: int | None = None) -> None:
    """Drop the kept provider row: one organisation's, or (None) every organisation's."""
    _kept.forget(organisation_id)


def provider_for(organisation: Organisation | None) -> Provider | None:
    """The organisation's provider, or None when there is no API key anywhere."""
    own = _organisation_settings(organisation) if organisation is not None else None
    key = own.api_key if own is not None else ""
    if own is not None and key:
        return _provider(own, "organisation", own.base_url, key)
    if settings.OPENAI_API_KEY:
        return _provider(own, "environment", settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY)
    return None


def provider_overridden(
    organisation: Organisation | None, *, base_url: str = "", api_key: str = "", model: str = ""
) -> Provider | None:
    """The organisation's provider with an operator's overrides (`manage.py evaluate --base-url
    --api-key --model`). A key given here goes to the base URL given here (else the configured
    one); a configured key never goes to another URL, so a new URL without a key of its own is a
    ValueError."""
    configured = provider_for(organisation)
    same_url = configured is not None and base_url.rstrip("/") == configured.base_url
    if base_url and not api_key and not same_url:
        raise ValueError("a base URL of your own needs an API key of your own")
    if api_key:
        own = _organisation_settings(organisation) if organisation is not None else None
        url = base_url or (configured.base_url if configured else settings.OPENAI_BASE_URL)
        configured = _provider(own, "command line", url, api_key)
    if configured is not None and model:
        configured = replace(configured, default_model=model)
    return configured


def _provider(own: ProviderSettings | None, source: str, base_url: str, key: str) -> Provider:
    default = (own.default_model if own else "") or settings.OPENAI_MODEL
    return Provider(
        base_url=base_url.rstrip("/"),
        api_key=key,
        default_model=default,
        timeout_s=_pick(own.timeout_s if own else None, settings.OPENAI_TIMEOUT),
        max_retries=int(_pick(own.max_retries if own else None, settings.OPENAI_MAX_RETRIES)),
        retry_budget_s=_pick(own.retry_budget_s if own else None, settings.OPENAI_RETRY_BUDGET),
        source=source,
        max_tokens=int(settings.OPENAI_MAX_TOKENS),
        deadline_s=float(settings.OPENAI_CALL_DEADLINE),
        vision_model=_capability(
            own.vision_model if own else "", str(settings.OPENAI_VISION_MODEL), default
        ),
        transcription_model=_capability(
            own.transcription_model if own else "", str(settings.OPENAI_TRANSCRIPTION_MODEL), ""
        ),
    )


def _capability(own: str, server: str, default: str) -> str:
    """The model for a capability: the organisation's, else the server's, else `default`;
    "off" at either level (the organisation's first) turns it off."""
    chosen = (own or "").strip() or (server or "").strip()
    if chosen.lower() == "off":
        return ""
    return chosen or default


def _pick(value: float | None, default: float) -> float:
    return float(default if value is None else value)


def engine_for(organisation: Organisation) -> tuple[str, Provider | None]:
    """(the engine turns really run, its provider): `organisation.engine`, except "embedded"
    when no provider is configured: an organisation set to llm or hybrid without a key still
    gets answers. An embedded organisation costs no query."""
    engine = str(organisation.engine or "embedded")
    if engine == "embedded":
        return engine, None
    provider = provider_for(organisation)
    return (engine, provider) if provider is not None else ("embedded", None)


def effective_engine(organisation: Organisation) -> str:
    return engine_for(organisation)[0]
