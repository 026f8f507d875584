"""Limits, sizes and leases read from the environment must make sense: a negative or zero
value stops start-up with ImproperlyConfigured (a lease of 0 s lapses as it is taken; a login
limit of -1 locks no one out — or everyone)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from capataz.settings import env_float, env_int

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("LOGIN_FAILURE_LIMIT", "-1", "LOGIN_FAILURE_LIMIT must be at least 1, got '-1'"),
        ("LOGIN_FAILURE_LIMIT", "0", "LOGIN_FAILURE_LIMIT must be at least 1, got '0'"),
        ("COPILOT_LEASE_SECONDS", "0", "COPILOT_LEASE_SECONDS must be a number more than 0"),
        ("COPILOT_LEASE_SECONDS", "nan", "COPILOT_LEASE_SECONDS must be a number more than 0"),
        ("CHANNEL_CAPACITY", "-5", "CHANNEL_CAPACITY must be at least 1"),
        ("OPENAI_TIMEOUT", "-1", "OPENAI_TIMEOUT must be a number more than 0"),
    ],
)
def test_a_negative_or_zero_limit_stops_start_up(
    tmp_path: Path, name: str, value: str, message: str
) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "CAPATAZ_VAR_DIR": str(tmp_path), name: value}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode != 0
    assert f"ImproperlyConfigured: {message}" in result.stderr


def test_the_helpers_keep_zero_where_it_means_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAPATAZ_TEST_INT", "0")
    assert (
        env_int("CAPATAZ_TEST_INT", 15, minimum=0) == 0
    )  # LOGIN_LOCKOUT_MINUTES=0: until unlocked
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env_int("CAPATAZ_TEST_INT", 5, minimum=1)
    monkeypatch.setenv("CAPATAZ_TEST_FLOAT", "0")
    assert env_float("CAPATAZ_TEST_FLOAT", 10.0) == 0.0  # a retry budget of 0: no retries
    with pytest.raises(ImproperlyConfigured, match="0 or more"):
        monkeypatch.setenv("CAPATAZ_TEST_FLOAT", "-0.5")
        env_float("CAPATAZ_TEST_FLOAT", 10.0)
    monkeypatch.setenv("CAPATAZ_TEST_FLOAT", "inf")
    with pytest.raises(ImproperlyConfigured):
        env_float("CAPATAZ_TEST_FLOAT", 10.0, positive=True)
    monkeypatch.delenv("CAPATAZ_TEST_FLOAT")
    assert env_float("CAPATAZ_TEST_FLOAT", 6.0, positive=True) == 6.0
