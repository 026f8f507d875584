"""Hypothesis against every way text gets in: query parameters of the pages, admin forms, the
login form and the panel's chat frames. Whatever arrives — NUL, lone surrogates, huge or deeply
nested JSON, dates out of range, junk ids — the answer is never a 5xx, and a chat frame is either
refused with a code or stored exactly once, never lost.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from business.hygiene import text_problem
from copilot.consumers import FRAME_ERRORS, parse_frame
from copilot.intake import MessageRefused, accept_message
from copilot.models import Message
from copilot.services import conversation_create
from tests import factories

pytestmark = pytest.mark.django_db

FUZZ = settings(
    max_examples=60, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip
PAGES = (
    "/", "/jobs/", "/customers/", "/technicians/", "/vehicles/", "/invoices/", "/quotes/",
    "/tickets/", "/approvals/", "/chat/", "/agents/tools/", "/admin/business/customer/",
    "/admin/business/job/", "/admin/business/payment/", "/admin/business/absence/",
)  # fmt: skip
PARAMS = ("q", "date", "status", "technician", "customer", "page", "state", "o", "p", "e")
# Anything a browser or an attacker can put in a field: every code point class, NUL and lone
# surrogates included, numbers at the edges of every type.
WILD = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec=None, categories=None), max_size=20),
    st.sampled_from(["\x00", "\ud800", "9999-12-31", "0000-00-00", "-1", "1e309", "NaN",
                     "99999999999999999999", "' OR 1=1 --", "<script>", "%00", "../../etc"]),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
)  # fmt: skip


def _encoded(data: dict[str, Any]) -> str:
    """A form or query as raw bytes, the way a hand-made request can carry a lone surrogate
    (%ED%A0%80), which the test client's own encoder refuses."""
    return "&".join(
        f"{key}={quote(str(value), safe='', errors='surrogatepass')}" for key, value in data.items()
    )


def _post(client: Client, url: str, data: dict[str, Any]) -> Any:
    return client.post(url, _encoded(data), content_type="application/x-www-form-urlencoded")


@pytest.fixture
def staff(cast: Any) -> Client:
    cast.admin.is_staff = True
    cast.admin.save()
    client = Client(raise_request_exception=False)
    client.force_login(cast.admin)
    return client


@FUZZ
@given(page=st.sampled_from(PAGES), params=st.dictionaries(st.sampled_from(PARAMS), WILD))
def test_query_parameters_never_make_a_page_fail(staff: Client, page: str, params: dict) -> None:
    response = staff.get(f"{page}?{_encoded(params)}")
    assert response.status_code < 500, (page, params)


@FUZZ
@given(name=WILD, cuit=WILD, phone=WILD, email=WILD)
def test_the_admin_customer_form_refuses_junk_without_failing(
    staff: Client, name: str, cuit: str, phone: str, email: str
) -> None:
    response = _post(
        staff, "/admin/business/customer/add/",
        {"name": name, "cuit": cuit, "phone": phone, "email": email, "kind": "person"},
    )  # fmt: skip
    assert response.status_code < 500, (name, cuit, phone, email)


@FUZZ
@given(amount=WILD, date=WILD)
def test_the_admin_payment_form_refuses_junk_without_failing(
    staff: Client, cast: Any, amount: str, date: str
) -> None:
    customer = factories.make_customer(cast.org, "Pagadora")
    invoice = factories.make_invoice(cast.org, customer)
    response = _post(
        staff, "/admin/business/payment/add/",
        {"invoice": invoice.pk, "amount": amount, "received_on": date, "method": "cash"},
    )  # fmt: skip
    assert response.status_code < 500, (amount, date)


@FUZZ
@given(username=WILD, password=WILD)
def test_the_login_form_never_fails(username: str, password: str) -> None:
    client = Client(raise_request_exception=False)
    response = _post(client, "/login/", {"username": username, "password": password})
    assert response.status_code < 500


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
FRAMES = st.one_of(
    st.text(max_size=200),  # not JSON, mostly
    _JSON.map(json.dumps),
    st.builds(lambda text, extra: json.dumps({"type": "message", "text": text, **extra}),
              st.text(max_size=80),
              st.dictionaries(st.sampled_from(["client_id", "consult", "x"]), _JSON)),
    st.integers(min_value=1, max_value=3000).map(lambda n: "[" * n + "]" * n),
    st.builds(lambda text: '{"type": "message", "text": "' + text + '"}',
              st.sampled_from(["\\u0000", "\\ud800", "a\\udfffb", "\\ud83d\\ude00 ok"])),
)  # fmt: skip


@FUZZ
@given(frame=FRAMES)
def test_a_chat_frame_is_refused_with_a_code_or_stored_exactly_once(cast: Any, frame: str) -> None:
    conversation = conversation_create(organisation=cast.org, user=cast.operator, channel="panel")
    parsed, problem = parse_frame(frame, None)
    if problem is not None:
        assert parsed is None and problem[0] in FRAME_ERRORS
        return
    assert parsed is not None
    text, client_id, consult = parsed
    assert text_problem(text) is None
    try:
        first = accept_message(
            conversation=conversation, user_id=cast.operator.pk, text=text, client_id=client_id,
            consult=consult,
        )  # fmt: skip
    except MessageRefused:
        pytest.fail(f"a frame that passed parsing was refused on storing: {frame!r}")
    stored = Message.objects.filter(conversation=conversation, role=Message.Role.USER)
    assert list(stored.values_list("text", flat=True)) == [text]
    if client_id:  # sent again: still one
        again = accept_message(
            conversation=conversation, user_id=cast.operator.pk, text=text, client_id=client_id
        )
        assert again.message_id == first.message_id and stored.count() == 1
