"""A customer the message says is new is registered with the details it gives (issue 24).

"agendame a Carla Mendoza … Es nueva, cargala con el cel …": the shipped router reads the last
part as an update of her record, which the registry's `new_as` folds into registering her; the
details of that part must reach the registration, not be dropped with the update.
"""

from __future__ import annotations

from typing import Any

import pytest

from agents.models import ToolCall
from copilot.orchestration.graph import run_graph
from copilot.services import conversation_create
from tests.conftest import Cast
from tests.copilot.conftest import Emitted, make_run

pytestmark = pytest.mark.usefixtures("default_agents")


@pytest.mark.parametrize(
    "text",
    [
        "agendame a Carla Mendoza mañana 10hs. Es nueva, cargala con el cel 11 6789 0011",
        "agendale un service a Carla Mendoza el lunes, es clienta nueva: su cel es 11 6789 0011",
    ],
)
def test_the_details_of_a_customer_said_to_be_new_reach_her_registration(
    cast: Cast, text: str, settings: Any
) -> None:
    settings.NLU_CORPUS = True  # the router production builds (registry + corpus)
    conversation = conversation_create(organisation=cast.org, user=cast.operator, channel="panel")
    run_graph(make_run(cast.org, cast.operator, conversation, text, Emitted()))
    created = ToolCall.objects.get(organisation=cast.org, tool="customer_create")
    assert created.arguments["name"] == "Carla Mendoza"
    assert "".join(c for c in created.arguments.get("phone", "") if c.isdigit()) == "1167890011"
    assert not ToolCall.objects.filter(organisation=cast.org, tool="customer_update").exists()
