"""Whether a name is the customer or the technician, from the words around it."""

from __future__ import annotations

import pytest

from nlu import Context, extract_entities


@pytest.mark.parametrize(
    ("text", "technician"),
    [
        ("Rick won't make it in today, he's sick", "Rick"),
        ("put Abel in the Transit for the Hall job", "Abel"),
        ("mandá a Lucas en la Kangoo", "Lucas"),
        ("asigná la Partner para Iván", "Iván"),
    ],
)
def test_a_technician_by_what_follows_or_the_vehicle(
    ctx: Context, text: str, technician: str
) -> None:
    assert extract_entities(text, ctx).technician == technician


@pytest.mark.parametrize(
    ("text", "customer"),
    [
        ("send Mrs. Okafor a quote for the boiler", "Okafor"),  # "send" would make a technician
        ("did the Brennan invoice get paid?", "Brennan"),
    ],
)
def test_a_customer_by_the_honorific_or_the_document(
    ctx: Context, text: str, customer: str
) -> None:
    assert extract_entities(text, ctx).customer == customer
