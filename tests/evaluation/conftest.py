"""Fixtures the evaluation tests share."""

from __future__ import annotations

import pytest

from agents.services import agents_install_defaults
from tests.conftest import Cast


@pytest.fixture
def registry(cast: Cast) -> Cast:
    """Both organisations with the default agents (the outsider's, to show it sees nothing)."""
    agents_install_defaults(organisation=cast.org)
    agents_install_defaults(organisation=cast.other_org)
    return cast
