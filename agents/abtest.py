"""A/B tests of an agent's configuration (V4): start, assign, stop, promote.

A test holds two recorded versions of one agent (arm A, arm B) and the share of conversations that
run on arm B. Assignment is sticky and needs no row: a conversation's arm is a deterministic hash
of the test's id and the conversation's id, so every turn of a conversation — in any process —
runs the same arm, and the split follows `share_b`. The turn (copilot/turn.py) asks `apply_arms`
for the configured agents; each AgentRun records its test and arm, which the per-arm metrics
(evaluation/abtests.py) read. Stopping names a winner; promoting writes the winner's configuration
as a NEW version of the agent through the registry's own versioning service (history is never
rewritten).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from agents import cache
from agents.models import ABTest, Agent, AgentVersion
from agents.selectors import running_tests
from agents.services import EDITABLE_FIELDS, Actor, agent_save, agent_snapshot
from business.models import Organisation

BUCKETS = 10_000  # a share is matched in hundredths of a percent


def bucket(test_id: int, conversation_id: int | str) -> int:
    """0…9999, stable across processes and Python runs (not `hash()`, which is salted)."""
    digest = hashlib.sha256(f"abtest:{test_id}:conversation:{conversation_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % BUCKETS


def arm_for(test_id: int, conversation_id: int | str, share_b: int) -> str:
    """ "b" for the first `share_b` % of the buckets, "a" for the rest."""
    return ABTest.Arm.B if bucket(test_id, conversation_id) < share_b * BUCKETS // 100 else "a"


# --- reads --------------------------------------------------------------------------------------


def tests_for_org(organisation: Organisation) -> QuerySet[ABTest]:
    return ABTest.objects.filter(organisation=organisation).select_related(
        "agent", "arm_a", "arm_b", "promoted_version", "created_by"
    )


def arm_version(test: ABTest, arm: str) -> AgentVersion:
    return test.arm_b if arm == ABTest.Arm.B else test.arm_a


def configured(agent: Agent, snapshot: dict[str, Any]) -> Agent:
    """A copy of `agent` with the snapshot's settings, never saved (same pk, same name)."""
    copy_ = cache.own_copy(agent)
    for key in EDITABLE_FIELDS:
        if key in snapshot:
            setattr(copy_, key, copy.deepcopy(snapshot[key]))
    return copy_


@dataclass(frozen=True)
class Arms:
    """What a turn runs with: the agents (arm configurations applied), each tested agent's
    (test id, arm), and the intents of arms whose examples the router must learn instead."""

    agents: dict[str, Agent]
    arms: dict[str, tuple[int, str]]
    intents: dict[str, list[dict[str, str]]]


def apply_arms(
    organisation: Organisation, conversation_id: int | None, agents: dict[str, Agent],
    running: Iterable[ABTest] | None = None,
) -> Arms:  # fmt: skip
    """The enabled agents as this conversation's arms configure them (one query when no test
    runs, none when `running` gives the tests). A turn with no conversation (a schedule's) runs
    the live configuration."""
    if conversation_id is None:
        return Arms(agents=agents, arms={}, intents={})
    result = dict(agents)
    arms: dict[str, tuple[int, str]] = {}
    intents: dict[str, list[dict[str, str]]] = {}
    for test in running_tests(organisation) if running is None else running:
        name = test.agent.name
        if name not in result:
            continue  # disabled meanwhile: nothing to test
        arm = arm_for(test.pk, conversation_id, test.share_b)
        snapshot = arm_version(test, arm).snapshot
        arms[name] = (test.pk, arm)
        if snapshot.get("enabled", True) is False:
            result.pop(name)
            continue
        result[name] = configured(result[name], snapshot)
        intents[name] = list(snapshot.get("intents", []))
    return Arms(agents=result, arms=arms, intents=intents)


# --- writes -------------------------------------------------------------------------------------


def _version(agent: Agent, number: int | None, label: str) -> AgentVersion:
    if number is None:
        raise ValidationError({label: _("Choose a version.")})
    version = AgentVersion.objects.filter(agent=agent, number=number).first()
    if version is None:
        raise ValidationError({label: _("Version %d does not exist.") % number})
    return version


@transaction.atomic
def abtest_start(
    *,
    organisation: Organisation,
    agent: Agent,
    version_a: int | None,
    version_b: int | None,
    share_b: int,
    name: str = "",
    actor: Actor = None,
) -> ABTest:
    """Start a test of two versions of one of the organisation's agents."""
    if agent.organisation_id != organisation.pk:
        raise ValidationError({"agent": _("Choose one of your organisation's agents.")})
    arm_a = _version(agent, version_a, "version_a")
    arm_b = _version(agent, version_b, "version_b")
    if arm_a.pk == arm_b.pk:
        raise ValidationError({"version_b": _("Choose two different versions.")})
    if not isinstance(share_b, int) or not 1 <= share_b <= 99:
        raise ValidationError({"share_b": _("The share on arm B must be between 1 and 99 %.")})
    if ABTest.objects.filter(agent=agent, state=ABTest.State.RUNNING).exists():
        raise ValidationError({"agent": _("This agent already has a running A/B test.")})
    label = name.strip()[:120] or f"{agent.name}: v{arm_a.number} vs v{arm_b.number}"
    creator = actor.pk if actor is not None and actor.is_authenticated else None
    try:
        with transaction.atomic():
            return ABTest.objects.create(
                organisation=organisation, agent=agent, name=label, arm_a=arm_a, arm_b=arm_b,
                share_b=share_b, created_by_id=creator,
            )  # fmt: skip
    except IntegrityError as exc:  # another start won the race
        raise ValidationError({"agent": _("This agent already has a running A/B test.")}) from exc


def abtest_stop(*, test: ABTest, winner: str = "") -> ABTest:
    """Stop the live split (conversations go back to the agent's live configuration)."""
    if winner not in ("", ABTest.Arm.A, ABTest.Arm.B):
        raise ValidationError({"winner": _("The winner is arm A or arm B.")})
    updated = ABTest.objects.filter(pk=test.pk, state=ABTest.State.RUNNING).update(
        state=ABTest.State.STOPPED, stopped_at=timezone.now(), winner=winner
    )
    if not updated:
        raise ValidationError(_("This A/B test is already stopped."))
    cache.forget(test.organisation_id)  # an update sends no signal
    test.refresh_from_db()
    return test


@transaction.atomic
def abtest_promote(*, test: ABTest, arm: str, actor: Actor = None) -> AgentVersion:
    """Stop the test (if running) with `arm` as the winner and write that arm's configuration
    as a new version of the agent."""
    if arm not in (ABTest.Arm.A, ABTest.Arm.B):
        raise ValidationError({"winner": _("The winner is arm A or arm B.")})
    row = ABTest.objects.select_for_update().get(pk=test.pk)
    if row.promoted_version_id is not None:
        raise ValidationError(_("This A/B test's winner was already promoted."))
    snapshot = arm_version(row, arm).snapshot
    agent = row.agent
    before = AgentVersion.objects.filter(agent=agent).order_by("-number").first()
    agent_save(
        agent=agent,
        changes={key: snapshot[key] for key in EDITABLE_FIELDS if key in snapshot},
        intents=list(snapshot.get("intents", [])),
        actor=actor,
        note=_("Promoted from A/B test #%(test)d (arm %(arm)s, v%(number)d)")
        % {"test": row.pk, "arm": arm.upper(), "number": arm_version(row, arm).number},
    )
    after = AgentVersion.objects.filter(agent=agent).order_by("-number").first()
    if after is None or (before is not None and after.pk == before.pk):
        # The live configuration already was the winner's: nothing changed, so no new version
        # would be written by the save. Record one anyway so the promotion is in the history.
        last = before.number if before is not None else 0
        after = AgentVersion.objects.create(
            agent=agent, number=last + 1, snapshot=agent_snapshot(agent),
            created_by_id=actor.pk if actor is not None and actor.is_authenticated else None,
            note=(_("Promoted from A/B test #%(test)d (arm %(arm)s, unchanged)")
                  % {"test": row.pk, "arm": arm.upper()})[:200],
        )  # fmt: skip
    ABTest.objects.filter(pk=row.pk).update(
        state=ABTest.State.STOPPED,
        stopped_at=row.stopped_at or timezone.now(),
        winner=arm,
        promoted_version=after,
    )
    cache.forget(row.organisation_id)  # an update sends no signal
    test.refresh_from_db()
    return after
