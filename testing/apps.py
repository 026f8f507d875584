from __future__ import annotations

from django.apps import AppConfig


class TestingConfig(AppConfig):
    """Test doubles, and the demo commands that run them (`manage.py whatsapp_fake_graph`,
    `manage.py whatsapp_fake_send`). Installed so its commands exist; nothing imports it."""

    name = "testing"
    verbose_name = "Test doubles"
