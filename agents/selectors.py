"""Reads of the agent registry, always scoped to one organisation."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from agents.defaults import INTENT_KEYS, SPEC_KEYS, intent_spec
from agents.models import ABTest, Agent, AgentIntent, AgentVersion
from agents.registry import Tool, all_tools
from business.models import Organisation
from nlu.values import IntentSpec

AnyUser = AbstractBaseUser | AnonymousUser

# (text, intent, agent name, lang)
TrainingExample = tuple[str, str, str, str]


def running_tests(organisation: Organisation) -> QuerySet[ABTest]:
    """The organisation's A/B tests that split conversations now."""
    return ABTest.objects.filter(
        organisation=organisation, state=ABTest.State.RUNNING
    ).select_related("agent", "arm_a", "arm_b")


def agents_for_org(organisation: Organisation, enabled_only: bool = True) -> QuerySet[Agent]:
    agents = Agent.objects.filter(organisation=organisation).prefetch_related("intents")
    return agents.filter(enabled=True) if enabled_only else agents


def get_agent_for_user(user: AnyUser, pk: int | str) -> Agent:
    """The agent when it belongs to one of the user's organisations; DoesNotExist otherwise.

    Templates (no organisation) are never returned: nobody's membership reaches them.
    """
    if not user.is_authenticated:
        raise Agent.DoesNotExist
    mine = Agent.objects.filter(organisation__memberships__user_id=user.pk).distinct()
    return mine.get(pk=pk)


def agent_versions(agent: Agent) -> QuerySet[AgentVersion]:
    return AgentVersion.objects.filter(agent=agent).select_related("created_by")


def _enabled_intents(organisation: Organisation) -> QuerySet[AgentIntent]:
    return AgentIntent.objects.filter(
        agent__organisation=organisation, agent__enabled=True
    ).order_by("agent_id", "pk")


def training_examples(organisation: Organisation) -> list[TrainingExample]:
    """Every example of every enabled agent's intents: what the embedded classifier learns from."""
    rows = _enabled_intents(organisation).values_list(
        "agent__name", "name", "examples_es", "examples_en"
    )
    examples: list[TrainingExample] = []
    for agent_name, intent, examples_es, examples_en in rows:
        for lang, block in (("es", examples_es), ("en", examples_en)):
            lines = (line.strip() for line in block.splitlines())
            examples.extend((line, intent, agent_name, lang) for line in lines if line)
    return examples


def intent_specs(organisation: Organisation) -> list[IntentSpec]:
    """What the product knows about each enabled intent, as the engine reads it (nlu/ is
    Django-free: it gets these plain values, never the rows)."""
    rows = _enabled_intents(organisation).values("agent__name", "name", *SPEC_KEYS)
    return [intent_spec(row["agent__name"], row) for row in rows]


def chain_openers(organisation_id: int) -> frozenset[str]:
    """The organisation's enabled intents that open every chain (`first`: the emergency)."""
    rows = AgentIntent.objects.filter(
        agent__organisation_id=organisation_id, agent__enabled=True, first=True
    )
    return frozenset(rows.values_list("name", flat=True))


def specs_of_agents(agents: Iterable[Agent]) -> dict[str, IntentSpec]:
    """The specs of these agents' intents (rows already fetched, e.g. a turn's agents)."""
    return {
        intent.name: intent_spec(agent.name, {key: getattr(intent, key) for key in INTENT_KEYS}
                                 | {"name": intent.name})
        for agent in agents
        for intent in agent.intents.all()
    }  # fmt: skip


def examples_fingerprint(organisation: Organisation) -> str:
    """A hash of what the classifier is trained on; it changes when any of that changes.

    One query over the organisation's intents with their agent's name and enabled flag, and
    the intents' specs (the router orders and relabels by them). Other settings (prompts,
    tools, thresholds) do not enter, so editing them keeps a cached model.
    """
    rows = (
        AgentIntent.objects.filter(agent__organisation=organisation)
        .order_by("agent_id", "pk")
        .values_list(
            "agent_id",
            "agent__name",
            "agent__enabled",
            "name",
            "examples_es",
            "examples_en",
            *SPEC_KEYS,
        )
    )
    digest = hashlib.sha256(json.dumps(list(rows), ensure_ascii=False).encode("utf-8"))
    return digest.hexdigest()


CATEGORY_ORDER = {"safe": 0, "suggest": 1, "execute": 2, "bulk": 3}


@dataclass(frozen=True)
class ToolRow:
    """One tool as a person reads it: `category` is the code (for styling), `category_label`
    and `description` are in the active language (call it under the request's language)."""

    name: str
    category: str
    category_label: str
    description: str
    agents: list[Agent]


def tools_overview(organisation: Organisation) -> list[ToolRow]:
    """Every tool of the registry with the organisation's agents that enable it."""
    agents = list(Agent.objects.filter(organisation=organisation).order_by("pk"))
    rows = []

    def risk(tool: Tool) -> tuple[int, str]:
        return (CATEGORY_ORDER.get(tool.category.value, len(CATEGORY_ORDER)), tool.name)

    for tool in sorted(all_tools(), key=risk):
        users = [agent for agent in agents if tool.name in (agent.tools or [])]
        category = tool.category
        rows.append(ToolRow(tool.name, category.value, category.label, tool.label, users))
    return rows
