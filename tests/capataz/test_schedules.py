"""The schedules are database rows admins can edit; each names a task that exists."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django_celery_beat.models import PeriodicTask

from capataz.celery import app
from capataz.schedules import SCHEDULES, install

pytestmark = pytest.mark.django_db


def test_every_schedule_is_installed_with_a_description_and_a_real_task() -> None:
    install()
    rows = {row.task: row for row in PeriodicTask.objects.all()}
    app.loader.import_default_modules()
    for entry in SCHEDULES:
        row = rows[entry.task]
        assert row.description and row.enabled
        assert entry.task in app.tasks
    # Written in the installation's language (es-ar), as the admin reads it.
    recover = rows["copilot.recover_turns"]
    assert recover.name == "copiloto: recuperar turnos trabados"
    assert recover.description.startswith("Cada 10 segundos:")


def test_an_admins_change_survives_the_next_install() -> None:
    install()
    row = PeriodicTask.objects.get(task="approvals.expire_due")
    row.enabled = False
    row.interval.every = 120
    row.interval.save()
    row.save()
    install()
    row.refresh_from_db()
    assert not row.enabled and row.interval.every == 120
    assert PeriodicTask.objects.filter(task="approvals.expire_due").count() == 1


def test_only_superusers_see_the_installation_wide_admin_pages(cast: Any) -> None:
    cast.admin.is_staff = True
    cast.admin.save()
    cast.admin.user_permissions.set(Permission.objects.all())
    root = get_user_model().objects.create_superuser("root", "root@example.com", "x")
    pages = ("/admin/django_celery_beat/periodictask/", "/admin/axes/accessattempt/",
             "/admin/auth/group/")  # fmt: skip
    staff, superuser = Client(), Client()
    staff.force_login(cast.admin)
    superuser.force_login(root)
    for page in pages:
        assert staff.get(page).status_code == 403, page
        assert superuser.get(page).status_code == 200, page
