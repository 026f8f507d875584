"""What Meta says about an organisation's WhatsApp account (issue 27.1): `account_update` webhooks
— a restriction, a policy violation, a ban — and a template paused or disabled
(whatsapp/approved.py) become a `WhatsAppAlert` for the organisation's admins, recorded once per
event (a redelivery is the same `key`). The admins see the unseen ones at the top of every panel
page (`whatsapp.context_processors.alerts`) and in the admin, where they mark them seen.

An account event that needs nothing of them (a verified name, a partner added) is only logged."""

from __future__ import annotations

import logging

from django.db.models import QuerySet

from whatsapp.models import WhatsAppAlert
from whatsapp.payload import AccountEvent

logger = logging.getLogger(__name__)

# account_update events that restrict what the number can do, or end it.
ACCOUNT_ALERTS = {
    "ACCOUNT_RESTRICTION", "ACCOUNT_VIOLATION", "DISABLED_UPDATE", "ACCOUNT_DELETED",
    "PARTNER_REMOVED", "VOLUME_BASED_PRICING_TIER_UPDATE_FAILED",
}  # fmt: skip


def account_event(organisation_id: int, event: AccountEvent) -> None:
    if event.event in ACCOUNT_ALERTS or "ban" in event.event.lower():
        alert_record(organisation_id, kind="account", event=event.event, subject="",
                     detail=event.detail, key=event.key)  # fmt: skip
    else:
        logger.info("WhatsApp account %s: %s", organisation_id, event.event)


def alert_record(
    organisation_id: int, *, kind: str, event: str, subject: str, detail: str, key: str
) -> bool:
    """The alert, once per event; False for a redelivery."""
    _alert, created = WhatsAppAlert.objects.get_or_create(
        organisation_id=organisation_id, key=key,
        defaults={"kind": kind, "event": event[:60], "subject": subject[:200], "detail": detail},
    )  # fmt: skip
    if created:
        logger.warning("WhatsApp alert for organisation %s: %s %s", organisation_id, event, subject)
    return created


def unseen(organisation_id: int) -> QuerySet[WhatsAppAlert]:
    return WhatsAppAlert.objects.filter(organisation_id=organisation_id, seen_at__isnull=True)
