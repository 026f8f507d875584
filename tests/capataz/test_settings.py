"""Production settings, secure by default: `check --deploy` is clean with only DEBUG=false, a
strong SECRET_KEY and ALLOWED_HOSTS; a weak key stops start-up. Each runs manage.py in a fresh
process with only those variables, as a deployment would."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _manage(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    # Nothing from this machine's environment but what Python needs: a deployment's variables.
    base = {"PATH": os.environ.get("PATH", ""), "CAPATAZ_VAR_DIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _production(**extra: str) -> dict[str, str]:
    return {
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "capataz.example.com",
        **extra,
    }


def test_check_deploy_is_clean_with_just_the_production_variables(tmp_path: Path) -> None:
    result = _manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **_production())
    assert result.returncode == 0, result.stderr + result.stdout
    assert "System check identified no issues (0 silenced)." in result.stdout


def test_turning_a_protection_off_is_possible_and_check_deploy_says_so(tmp_path: Path) -> None:
    result = _manage(tmp_path, "check", "--deploy", **_production(SECURE_SSL_REDIRECT="false"))
    assert "security.W008" in result.stderr + result.stdout


@pytest.mark.parametrize(
    "key",
    [
        "abcde",  # short
        "ab" * 40,  # long but only two characters
        # startproject's development prefix (a fixed key: xdist workers must collect the same ids)
        "django-insecure-" + "kPOZXjSUavQGJzIGQ93wRnbykHcbgtXnHh2MedZv3FBtEMCd_qKA3e7a",
        "capataz-insecure-development-key-do-not-use-in-production",  # our own development key
    ],
)
def test_a_weak_secret_key_stops_start_up(tmp_path: Path, key: str) -> None:
    result = _manage(tmp_path, "check", **_production(SECRET_KEY=key))
    assert result.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is too weak" in result.stderr


def test_a_weak_secret_key_is_fine_for_development(tmp_path: Path) -> None:
    result = _manage(tmp_path, "check", DEBUG="true", SECRET_KEY="dev")
    assert result.returncode == 0, result.stderr
