"""A/B tests of agent configurations (V4): sticky assignment and split, the turn running the arm's
configuration and recording its arm, per-arm metrics with a z-test, the offline comparison, stop and
promote as a new version, and tenancy."""

from __future__ import annotations

import datetime
import json
import math
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agents import abtest
from agents.models import ABTest, Agent, AgentVersion
from agents.selectors import running_tests
from agents.services import agent_save, agents_install_defaults
from copilot import router_cache
from copilot.models import AgentRun, Message
from copilot.services import conversation_create
from evaluation.abtests import offline_compare, online_results, two_proportion_z_test
from tests.conftest import Cast


@pytest.fixture(autouse=True)
def fresh_routers() -> Any:
    router_cache.forget()
    yield
    router_cache.forget()


def _agent(cast: Cast, name: str = "customer") -> Agent:
    agents_install_defaults(organisation=cast.org)
    return Agent.objects.get(organisation=cast.org, name=name)


def _two_versions(agent: Agent, **changes: Any) -> tuple[int, int]:
    """v1 as installed, v2 with `changes` (which stays live)."""
    agent_save(agent=agent, changes=changes or {"min_confidence": 0.9})
    numbers = list(agent.versions.order_by("number").values_list("number", flat=True))
    return numbers[0], numbers[-1]


def _start(cast: Cast, agent: Agent, share: int = 50, **changes: Any) -> ABTest:
    a, b = _two_versions(agent, **changes)
    return abtest.abtest_start(
        organisation=cast.org, agent=agent, version_a=a, version_b=b, share_b=share
    )


# --- assignment -----------------------------------------------------------------------------


def test_assignment_is_sticky_and_split_as_configured() -> None:
    for share in (10, 30, 50, 80):
        arms = [abtest.arm_for(7, conversation, share) for conversation in range(1, 1001)]
        on_b = arms.count("b")
        # Binomial(1000, share): within 4 standard deviations.
        spread = 4 * math.sqrt(1000 * share / 100 * (1 - share / 100))
        assert abs(on_b - share * 10) <= spread, (share, on_b)
        # Sticky: the same conversation always gets the same arm.
        assert arms == [abtest.arm_for(7, conversation, share) for conversation in range(1, 1001)]
    # Another test splits the same conversations differently (independent hashes).
    first = [abtest.arm_for(1, c, 50) for c in range(1, 201)]
    second = [abtest.arm_for(2, c, 50) for c in range(1, 201)]
    assert first != second


def test_a_share_is_a_threshold_on_the_same_buckets() -> None:
    # Raising the share only moves conversations from A to B, never back.
    for conversation in range(1, 300):
        if abtest.arm_for(3, conversation, 20) == "b":
            assert abtest.arm_for(3, conversation, 60) == "b"


def test_apply_arms_gives_each_conversation_its_arms_configuration(cast: Cast) -> None:
    agent = _agent(cast)
    test = _start(cast, agent, share=50, min_confidence=0.9, prompt="Brazo B")
    live = {a.name: a for a in Agent.objects.filter(organisation=cast.org, enabled=True)}
    on_b = next(c for c in range(1, 100) if abtest.arm_for(test.pk, c, 50) == "b")
    on_a = next(c for c in range(1, 100) if abtest.arm_for(test.pk, c, 50) == "a")

    b = abtest.apply_arms(cast.org, on_b, live)
    a = abtest.apply_arms(cast.org, on_a, live)

    assert b.arms == {"customer": (test.pk, "b")} and a.arms == {"customer": (test.pk, "a")}
    assert b.agents["customer"].min_confidence == 0.9 and b.agents["customer"].prompt == "Brazo B"
    assert a.agents["customer"].min_confidence == test.arm_a.snapshot["min_confidence"]
    assert b.agents["customer"].pk == agent.pk
    # The live rows are untouched.
    agent.refresh_from_db()
    assert agent.prompt == "Brazo B"  # v2 is what the save left live…
    assert live["customer"].prompt == "Brazo B"  # …and the copy did not change it either
    assert abtest.apply_arms(cast.org, None, live).arms == {}  # no conversation: live config


# --- start / stop / promote -----------------------------------------------------------------


def test_start_refuses_bad_input_and_changes_nothing(cast: Cast) -> None:
    agent = _agent(cast)
    a, b = _two_versions(agent)
    other = Agent.objects.get(organisation=cast.org, name="scheduling")
    foreign = agents_install_defaults(organisation=cast.other_org)[0]

    def start(**kwargs: Any) -> None:
        values: dict[str, Any] = {
            "organisation": cast.org, "agent": agent, "version_a": a, "version_b": b, "share_b": 50,
        } | kwargs  # fmt: skip
        abtest.abtest_start(**values)

    for bad in ({"version_b": a}, {"share_b": 0}, {"share_b": 100}, {"version_b": 99},
                {"version_a": None}, {"agent": foreign}):  # fmt: skip
        with pytest.raises(ValidationError):
            start(**bad)
    assert not ABTest.objects.exists()
    start()
    with pytest.raises(ValidationError):
        start()  # one running test per agent
    assert ABTest.objects.count() == 1
    # Another agent may run its own test at the same time.
    other_a, other_b = _two_versions(other)
    start(agent=other, version_a=other_a, version_b=other_b)
    assert ABTest.objects.filter(state="running").count() == 2


def test_promote_writes_a_new_version_with_the_winners_configuration(cast: Cast) -> None:
    agent = _agent(cast)
    test = _start(cast, agent, min_confidence=0.9)
    agent_save(agent=agent, changes={"min_confidence": 0.4})  # the live config moved on meanwhile
    history = list(agent.versions.order_by("number").values("number", "snapshot"))

    version = abtest.abtest_promote(test=test, arm="b")

    agent.refresh_from_db()
    assert version.number == history[-1]["number"] + 1
    assert agent.min_confidence == 0.9
    assert version.snapshot == {**test.arm_b.snapshot}
    assert list(agent.versions.order_by("number").values("number", "snapshot"))[:-1] == history
    test.refresh_from_db()
    assert (test.state, test.winner, test.promoted_version_id) == ("stopped", "b", version.pk)
    with pytest.raises(ValidationError):
        abtest.abtest_promote(test=test, arm="a")
    with pytest.raises(ValidationError):
        abtest.abtest_stop(test=test)


def test_promoting_the_live_configuration_still_records_a_version(cast: Cast) -> None:
    agent = _agent(cast)
    test = _start(cast, agent, min_confidence=0.9)  # arm B (v2) is live
    before = agent.versions.count()

    version = abtest.abtest_promote(test=test, arm="b")

    assert agent.versions.count() == before + 1 and version.snapshot["min_confidence"] == 0.9


def test_stop_without_a_winner(cast: Cast) -> None:
    test = _start(cast, _agent(cast))
    abtest.abtest_stop(test=test)
    assert test.state == "stopped" and test.winner == "" and test.stopped_at is not None
    assert not running_tests(cast.org).exists()
    with pytest.raises(ValidationError):
        abtest.abtest_stop(test=test)


# --- measuring ------------------------------------------------------------------------------


def test_z_test_against_a_hand_computed_value() -> None:
    # A 40/100, B 55/100: pooled 0.475, SE √(0.475·0.525·0.02) = 0.070622, z = 0.15 / SE.
    result = two_proportion_z_test(40, 100, 55, 100)

    assert result is not None
    assert result.z == pytest.approx(2.12398, abs=1e-4)
    assert result.p_value == pytest.approx(0.033672, abs=1e-5)
    assert result.significant() and result.difference == pytest.approx(0.15)
    assert two_proportion_z_test(0, 0, 5, 10) is None
    assert two_proportion_z_test(10, 10, 10, 10).p_value == 1.0  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        two_proportion_z_test(11, 10, 1, 10)


def test_per_arm_metrics_and_significance(cast: Cast) -> None:
    agent = _agent(cast)
    test = _start(cast, agent)
    conversation = conversation_create(organisation=cast.org, user=cast.operator, channel="panel")
    now = timezone.now()
    rows = []
    for arm, successes, total in (("a", 40, 100), ("b", 55, 100)):
        for i in range(total):
            rows.append(AgentRun(
                organisation=cast.org, conversation=conversation, turn_id=f"{arm}{i}",
                agent="customer", intent="search_customer", latency_ms=10 * (i + 1),
                success=i < successes, abtest_id=test.pk, abtest_arm=arm, created_at=now,
            ))  # fmt: skip
    # Runs outside the test (no arm) and of another agent do not count.
    rows.append(AgentRun(organisation=cast.org, turn_id="x", agent="customer", created_at=now))
    AgentRun.objects.bulk_create(rows)

    online = online_results(test)

    assert (online.a.row.successes, online.a.row.ran) == (40, 100)
    assert (online.b.row.successes, online.b.row.ran) == (55, 100)
    assert online.a.conversations == 1
    # 10, 20 … 1000 ms: P50 at 49.5 → 505.
    assert online.b.row.latency_p50 == pytest.approx(505.0)
    assert online.z_test is not None and online.z_test.z == pytest.approx(2.12398, abs=1e-4)


def test_offline_comparison_runs_both_arms_on_a_dataset(cast: Cast, tmp_path: Path) -> None:
    agent = _agent(cast, "fleet")
    snapshot = agent.versions.order_by("number").first().snapshot  # type: ignore[union-attr]
    # Arm B forgets every example of the fleet agent's intents but one.
    intents = [dict(i, examples_es="", examples_en="") for i in snapshot["intents"]]
    intents[0] = snapshot["intents"][0]
    agent_save(agent=agent, changes={}, intents=intents)
    a, b = 1, agent.versions.order_by("-number").first().number  # type: ignore[union-attr]
    test = abtest.abtest_start(organisation=cast.org, agent=agent, version_a=a, version_b=b,
                               share_b=50)  # fmt: skip
    lines = [line for line in (Path("evaluation/datasets/golden.jsonl").read_text().splitlines())
             if '"fleet"' in line][:12]  # fmt: skip
    assert lines, "the golden set has fleet cases"
    dataset = tmp_path / "fleet.jsonl"
    dataset.write_text("\n".join(lines) + "\n")

    results = offline_compare(test, dataset, reference_date=datetime.date(2026, 11, 24))

    assert results["a"]["cases"] == results["b"]["cases"] == len(lines)
    assert results["a"]["agent_accuracy"] > results["b"]["agent_accuracy"]
    test.refresh_from_db()
    assert test.offline["a"]["version"] == a and test.offline["b"]["version"] == b


# --- the live turn --------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_live_turn_runs_its_arm_and_records_it(cast: Cast) -> None:
    from tests.copilot.turns import answer

    text = "buscá al cliente Juan Pérez"
    agents_install_defaults(organisation=cast.org)
    first = conversation_create(organisation=cast.org, user=cast.operator, channel="panel")
    answer(first, cast.operator.pk, text)
    name = AgentRun.objects.get(conversation=first).agent
    agent = Agent.objects.get(organisation=cast.org, name=name)
    test = _start(cast, agent, share=50, min_confidence=1.0)  # arm B yields every step
    agent_save(
        agent=agent,
        changes={"min_confidence": agent.versions.get(number=1).snapshot["min_confidence"]},
    )  # fmt: skip  (live = arm A again)

    conversations: dict[str, Any] = {}
    while len(conversations) < 2:
        conversation = conversation_create(organisation=cast.org, user=cast.operator)
        conversations.setdefault(abtest.arm_for(test.pk, conversation.pk, 50), conversation)
    for arm, conversation in conversations.items():
        answer(conversation, cast.operator.pk, text)
        run = AgentRun.objects.filter(conversation=conversation, agent=name).first()
        assert run is not None and (run.abtest_id, run.abtest_arm) == (test.pk, arm)
        assert run.yielded is (arm == "b")
        reply = Message.objects.filter(conversation=conversation, role="assistant").last()
        assert reply is not None and reply.trace["abtests"] == {name: {"test": test.pk, "arm": arm}}
    # Stopped: conversations run the live configuration and record no arm.
    abtest.abtest_stop(test=test)
    answer(conversations["b"], cast.operator.pk, text)
    last = AgentRun.objects.filter(conversation=conversations["b"], agent=name).last()
    assert last is not None and last.abtest_id is None and not last.yielded


# --- pages and tenancy ----------------------------------------------------------------------


def test_an_admin_starts_a_test_from_the_page(client: Client, cast: Cast) -> None:
    agent = _agent(cast)
    a, b = _two_versions(agent)
    client.force_login(cast.admin)

    bad = client.post(reverse("abtests"), {"agent": agent.pk, "version_a": a, "version_b": a,
                                          "share_b": 50})  # fmt: skip
    assert bad.status_code == 400 and b"data-errors" in bad.content
    assert not ABTest.objects.exists()
    response = client.post(
        reverse("abtests"), {"agent": agent.pk, "version_a": a, "version_b": b, "share_b": 20}
    )

    test = ABTest.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "abtest_detail", args=[test.pk])  # fmt: skip
    assert (test.share_b, test.arm_a.number, test.arm_b.number) == (20, a, b)
    detail = client.get(reverse("abtest_detail", args=[test.pk]))
    assert detail.status_code == 200 and b"data-ztest" in detail.content
    promoted = client.post(reverse("abtest_promote", args=[test.pk]), {"winner": "b"})
    assert promoted.status_code == 302
    test.refresh_from_db()
    assert test.promoted_version is not None


def test_offline_view_reports_a_bad_file_and_keeps_the_test(client: Client, cast: Cast) -> None:
    test = _start(cast, _agent(cast))
    client.force_login(cast.admin)
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("bad.jsonl", b'{"input": "hola"}\nnot json\n')
    response = client.post(reverse("abtest_offline", args=[test.pk]), {"file": upload},
                           follow=True)  # fmt: skip

    assert response.status_code == 200
    assert "bad.jsonl" not in json.dumps(ABTest.objects.get(pk=test.pk).offline)
    assert any("did not run" in str(m) or "no se" in str(m).lower()
               for m in response.context["messages"])  # fmt: skip


def test_managers_read_but_do_not_decide(client: Client, cast: Cast) -> None:
    test = _start(cast, _agent(cast))
    client.force_login(cast.manager)

    assert client.get(reverse("abtest_detail", args=[test.pk])).status_code == 200
    assert client.post(reverse("abtest_stop", args=[test.pk])).status_code == 403
    assert (
        client.post(reverse("abtest_promote", args=[test.pk]), {"winner": "b"}).status_code == 403
    )
    client.force_login(cast.operator)
    assert client.get(reverse("abtests")).status_code == 403
    assert ABTest.objects.get().state == "running"


def test_outsider_with_staff_permissions_sees_nothing(client: Client, cast: Cast) -> None:
    test = _start(cast, _agent(cast))
    cast.outsider.is_staff = True
    cast.outsider.save()
    client.force_login(cast.outsider)

    listing = client.get(reverse("abtests"))
    assert listing.status_code == 200 and listing.context["tests"] == []
    assert test.name.encode() not in listing.content
    assert client.get(reverse("abtest_detail", args=[test.pk])).status_code == 404
    for name in ("abtest_stop", "abtest_promote", "abtest_offline"):
        response = client.post(reverse(name, args=[test.pk]), {"winner": "b", "dataset": "golden"})
        assert response.status_code == 404
    before = AgentVersion.objects.filter(agent=test.agent).count()
    agent_b = agents_install_defaults(organisation=cast.other_org)[0]
    response = client.post(reverse("abtests"), {"agent": test.agent.pk, "version_a": 1,
                                                "version_b": 2, "share_b": 50})  # fmt: skip
    assert response.status_code == 400 and ABTest.objects.count() == 1
    test.refresh_from_db()
    assert test.state == "running" and test.promoted_version is None
    assert AgentVersion.objects.filter(agent=test.agent).count() == before
    assert agent_b.organisation_id == cast.other_org.pk
