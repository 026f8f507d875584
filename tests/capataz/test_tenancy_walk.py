"""Every URL of the project, walked as an outsider: nothing of another organisation shows, nothing
of it changes.

The patterns come from the URLconf itself (the admin's included), so a new view is walked the day
it is added. A victim organisation holds one record of every kind, each with a marker in its text;
attackers are members of another organisation — an operator, a manager, and an admin with staff
status and every model permission — plus an anonymous visitor. Each pattern is requested with
the victim's ids in its arguments (GET, then POST with the victim's ids in the form too); no
response may be a 5xx or contain a marker, and the victim's rows must be byte for byte what they
were. The counts are logged (`pytest --log-cli-level=INFO`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from agents.models import ProactiveSchedule, ScheduleRun, Suggestion
from agents.services import agents_install_defaults
from approvals.models import PendingAction
from business.models import EscalationTicket, Organisation, Quote
from copilot.models import Message
from copilot.services import conversation_create, message_add
from tests import factories

pytestmark = pytest.mark.django_db

logger = logging.getLogger(__name__)
MARK = "Zqvictim"  # in every victim record's text; never in the attackers' own
ROLES = ("anonymous", "operator", "manager", "admin")
_CONVERTER = re.compile(r"<(?:(\w+):)?(\w+)>")


@dataclass
class Victim:
    org: Organisation
    ids: dict[str, int] = field(default_factory=dict)  # model label → a victim row's pk

    def id_pool(self) -> list[int]:
        return sorted(set(self.ids.values()))


def _victim() -> Victim:
    org = factories.make_org(f"{MARK} Climatización", slug="zq-victim")
    agents_install_defaults(organisation=org)
    manager = factories.make_user(org, "manager", username="zq_manager")
    operator = factories.make_user(org, "operator", username="zq_operator")
    customer = factories.make_customer(org, f"{MARK} Ferreyra", email="zq@victim.example")
    technician = factories.make_technician(org, f"{MARK} Técnico")
    vehicle = factories.make_vehicle(org, "ZQ123VV")
    job = factories.make_job(org, customer, technician=technician, notes=f"{MARK} nota")
    equipment = factories.make_equipment(org, customer, brand=f"{MARK} Brand")
    invoice = factories.make_invoice(org, customer)
    payment = factories.make_payment(org, invoice, "100")
    quote = Quote.objects.create(organisation=org, customer=customer, number="ZQ-0001")
    price = factories.make_price_item(org, f"{MARK} service", "1000")
    absence = factories.make_absence(org, technician, factories.next_monday(), reason=MARK)
    ticket = EscalationTicket.objects.create(
        organisation=org, customer=customer, job=job, summary=f"{MARK} reclamo"
    )
    conversation = conversation_create(organisation=org, user=operator, channel="panel")
    message = message_add(conversation=conversation, role=Message.Role.USER, text=f"{MARK} hola")
    action = PendingAction.objects.create(
        organisation=org, agent="scheduling", intent="cancel_job", tool="job_cancel",
        category="execute", arguments={"job_id": job.pk}, summary=f"{MARK} cancelar",
        requested_by=operator,
    )  # fmt: skip
    run = ScheduleRun.objects.create(organisation=org, detector="follow_ups", error=MARK)
    suggestion = Suggestion.objects.create(
        organisation=org, kind="follow_up", records={"job": job.pk}, customer=customer,
        subject=f"follow_up:job={job.pk}", dedupe_key=f"follow_up:job={job.pk}:",
        facts={"customer": f"{MARK} Ferreyra", "service": MARK, "completed_on": "2026-01-02",
               "days_ago": 3, "technician": ""},
        tool="follow_up_record", arguments={"job_id": job.pk}, run=run,
    )  # fmt: skip
    schedule = ProactiveSchedule.objects.filter(organisation=org).first()
    victim = Victim(org)
    for row in (org, manager, operator, customer, technician, vehicle, job, equipment, invoice,
                payment, quote, price, absence, ticket, conversation, message, action, run,
                suggestion, schedule):  # fmt: skip
        assert row is not None
        victim.ids[row._meta.label_lower] = row.pk
    for agent in org.agents.all()[:1]:
        victim.ids[agent._meta.label_lower] = agent.pk
    return victim


def _attackers() -> dict[str, Any]:
    own = factories.make_org("Atacante SRL", slug="attacker")
    factories.make_customer(own, "Cliente Propio")
    admin = factories.make_user(own, "admin", username="att_admin")
    admin.is_staff = True
    admin.save()
    admin.user_permissions.set(Permission.objects.all())  # every model permission Django has
    return {
        "anonymous": None,
        "operator": factories.make_user(own, "operator", username="att_operator"),
        "manager": factories.make_user(own, "manager", username="att_manager"),
        "admin": admin,
    }


def _patterns(resolvers: list[Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    for entry in resolvers:
        if isinstance(entry, URLResolver):
            yield from _patterns(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry.name or ""


def _urls(victim: Victim) -> Iterator[str]:
    """Each pattern with the victim's ids: an admin object URL gets its own model's victim row,
    any other id-taking URL every victim id."""
    for pattern, name in _patterns(get_resolver().url_patterns):
        if pattern.startswith("^") or "(?P" in pattern:  # regex patterns (static, media)
            continue
        arguments = _CONVERTER.findall(pattern)
        if not arguments:
            yield "/" + pattern
            continue
        admin_model = _admin_model(name)
        if admin_model is not None:
            pk = victim.ids.get(admin_model, 0)
            values = [str(pk)]
        elif "app_label" in pattern:
            values = ["business", "copilot", "approvals", "agents", "llm"]
        else:
            values = [str(pk) for pk in victim.id_pool()]
        for value in values:
            yield "/" + _CONVERTER.sub(value, pattern)


def _admin_model(name: str) -> str | None:
    """`business_customer_change` → "business.customer" (for the admin's per-model views)."""
    for model in apps.get_models():
        label = f"{model._meta.app_label}_{model._meta.model_name}_"
        if name.startswith(label):
            return model._meta.label_lower
    return None


def _fingerprint(org: Organisation) -> str:
    """Every row of the victim's organisation, in order."""
    digest = hashlib.sha256()
    for model in apps.get_models():
        fields = {f.name for f in model._meta.concrete_fields}
        if "organisation" not in fields:
            continue
        rows = model._default_manager.filter(organisation=org).order_by("pk").values()
        digest.update(model._meta.label.encode())
        digest.update(json.dumps(list(rows), default=str, sort_keys=True).encode())
    digest.update(
        json.dumps(list(Organisation.objects.filter(pk=org.pk).values()), default=str).encode()
    )
    return digest.hexdigest()


def _client(user: Any) -> Client:
    client = Client(raise_request_exception=False)
    if user is not None:
        client.force_login(user)
    return client


def _leak(response: Any) -> bool:
    body = b"" if getattr(response, "streaming", False) else response.content
    location = response.get("Location", "")
    return MARK.encode() in body or MARK in location


def _write_attempts(victim: Victim) -> list[tuple[str, dict[str, Any]]]:
    """Forms that would change the victim's rows if anything let them through."""
    customer, job = victim.ids["business.customer"], victim.ids["business.job"]
    return [
        (f"/admin/business/customer/{customer}/change/", {"name": "HACKED", "kind": "person"}),
        (f"/admin/business/customer/{customer}/delete/", {"post": "yes"}),
        ("/admin/business/customer/add/",
         {"name": "Injected", "organisation": victim.org.pk, "kind": "person"}),
        ("/admin/business/escalationticket/add/",
         {"customer": customer, "job": job, "summary": "x", "priority": "normal",
          "reason": "complaint", "status": "open", "organisation": victim.org.pk}),
        (f"/approvals/{victim.ids['approvals.pendingaction']}/decide/", {"decision": "approve"}),
        (f"/admin/business/job/{job}/change/", {"status": "cancelled"}),
        (f"/suggestions/{victim.ids['agents.suggestion']}/accept/", {"note": "x"}),
        (f"/suggestions/{victim.ids['agents.suggestion']}/dismiss/", {"reason": "x"}),
        (f"/admin/agents/proactiveschedule/{victim.ids['agents.proactiveschedule']}/change/",
         {"hour": "1", "minute": "1", "weekdays": "*", "days": "1"}),
        ("/admin/agents/proactiveschedule/",
         {"action": "run_now", "_selected_action": [victim.ids["agents.proactiveschedule"]]}),
    ]  # fmt: skip


@pytest.mark.parametrize("role", ROLES)
def test_an_outsider_sees_and_changes_nothing_anywhere(role: str, settings: Any) -> None:
    settings.DEBUG = False  # error pages as in production
    victim = _victim()
    attacker = _attackers()[role]
    client = _client(attacker)
    before = _fingerprint(victim.org)
    requests = leaks = errors = 0
    problems: list[str] = []
    urls = sorted(set(_urls(victim)))
    for url in urls:
        for method in ("get", "post"):
            data = {"organisation": victim.org.pk, "customer": victim.ids["business.customer"]}
            response = getattr(client, method)(url, data if method == "post" else None)
            requests += 1
            if response.status_code >= 500:
                errors += 1
                problems.append(f"{method.upper()} {url} → {response.status_code}")
            elif _leak(response):
                leaks += 1
                problems.append(f"{method.upper()} {url} → shows {MARK}")
    for url, data in _write_attempts(victim):
        response = client.post(url, data)
        requests += 1
        if response.status_code >= 500:
            errors += 1
            problems.append(f"POST {url} → {response.status_code}")
    after = _fingerprint(victim.org)

    logger.info(
        "tenancy walk [%s]: %d URLs from the URLconf, %d requests, %d leaks, %d server errors, "
        "victim rows changed: %s", role, len(urls), requests, leaks, errors, before != after,
    )  # fmt: skip
    assert problems == []
    assert before == after
    assert len(urls) > 150  # the walk really covers the URLconf (the admin included)
