"""The libraries' words in the reader's language (issue 28: one language per screen).

The demo's admin is a superuser and sees two libraries' admin pages: the beat schedules
(django-celery-beat, whose Spanish catalogue lacks its newer strings and leaves "0 and 255" and
"None" in two of its sentences) and the sign-in records (django-axes, which has no Spanish).

- Their strings are listed here with `gettext_noop`, so `make messages` keeps them in our own
  catalogue (locale/es_AR), which Django reads before any app's.
- Three texts are not in any catalogue, and are made ours when the apps are ready (`adopt`):
  - a crontab's description, written by cron-descriptor in the process's locale: here, in the
    reader's language and on a 24-hour clock;
  - the names django-axes gives its records ("Access Log for jefa @ …");
  - the field name "Task Name", which django-celery-beat does not mark for translation. It is
    relabelled in the admin only (capataz/admin.py): a field's own name is part of the
    library's migrations.
"""

from __future__ import annotations

import calendar
import re
from typing import Any

from django.utils.dates import MONTHS, WEEKDAYS
from django.utils.formats import date_format
from django.utils.timezone import localtime
from django.utils.translation import get_language, gettext, gettext_lazy, gettext_noop

# django-celery-beat: missing from its Spanish catalogue, or translated there with English left.
CELERY_BEAT = (
    gettext_noop("Arguments"),
    gettext_noop("Execution Options"),
    gettext_noop("Periodic Tasks Using This Schedule"),
    gettext_noop("periodic task track"),
    gettext_noop("periodic task tracks"),
    gettext_noop('Cron Months (1-12) Of The Year to Run. Use "*" for "all". (Example: "1,12")'),
    gettext_noop(
        "Priority Number between 0 and 255. Supported by: RabbitMQ, Redis (priority reversed, "
        "0 is highest)."
    ),
    gettext_noop(
        "Datetime that the schedule last triggered the task to run. Reset to None if enabled is "
        "set to False."
    ),
)

# django-axes: every string its admin shows.
AXES = (
    gettext_noop("Form Data"),
    gettext_noop("Meta Data"),
    gettext_noop("User Agent"),
    gettext_noop("IP Address"),
    gettext_noop("Username"),
    gettext_noop("HTTP Accept"),
    gettext_noop("Path"),
    gettext_noop("Attempt Time"),
    gettext_noop("Logout Time"),
    gettext_noop("Access lock out"),
    gettext_noop("access failure"),
    gettext_noop("access failures"),
    gettext_noop("GET Data"),
    gettext_noop("POST Data"),
    gettext_noop("Failed Logins"),
    gettext_noop("access attempt"),
    gettext_noop("access attempts"),
    gettext_noop("access log"),
    gettext_noop("access logs"),
)

# cron-descriptor's own catalogues, by the reader's language (it has no es_AR).
_CRON_LOCALES = {"es": "es_ES", "en": "en_US"}


def cron_described(minute: str, hour: str, day_of_month: str, month: str, day_of_week: str) -> str:
    """ "A las 03:30" / "At 03:30 AM": a crontab in the reader's language (Spanish on a
    24-hour clock)."""
    from cron_descriptor import ExpressionDescriptor, Options

    options = Options()
    language = (get_language() or "es")[:2]
    options.locale_code = _CRON_LOCALES.get(language, "en_US")
    options.use_24hour_time_format = language != "en"
    expression = f"{minute} {hour} {day_of_month} {month} {day_of_week}"
    described = str(ExpressionDescriptor(expression, options).get_description())
    # Its day and month names come from the process's C locale: English, whatever the reader's.
    lower = language != "en"
    for number, name in enumerate(calendar.day_name):
        shown = str(WEEKDAYS[number])
        described = re.sub(rf"\b{name}\b", shown.lower() if lower else shown, described)
    for number, name in enumerate(calendar.month_name[1:], 1):
        shown = str(MONTHS[number])
        described = re.sub(rf"\b{name}\b", shown.lower() if lower else shown, described)
    return described


def _crontab_human_readable(crontab: Any) -> str:
    from cron_descriptor import FormatException, MissingFieldException, WrongArgumentException

    try:
        described = cron_described(
            crontab.minute, crontab.hour, crontab.day_of_month, crontab.month_of_year,
            crontab.day_of_week,
        )  # fmt: skip
    except (FormatException, MissingFieldException, WrongArgumentException):
        return gettext("Invalid cron")
    return f"{described} {crontab.timezone}"


def _when(moment: Any) -> str:
    return date_format(localtime(moment), "SHORT_DATETIME_FORMAT") if moment else ""


def _attempt(attempt: Any) -> str:
    return gettext("Failed sign-in of %(user)s on %(when)s from %(ip)s") % {
        "user": attempt.username, "when": _when(attempt.attempt_time), "ip": attempt.ip_address,
    }  # fmt: skip


def _failure(failure: Any) -> str:
    return gettext("Failed sign-in on %(when)s") % {"when": _when(failure.attempt_time)}


def _log(log: Any) -> str:
    return gettext("Sign-in of %(user)s on %(when)s") % {
        "user": log.username,
        "when": _when(log.attempt_time),
    }


# Django's own permissions are named in English when `migrate` creates them ("Can add agent"),
# whatever the reader's language; the admin's permission lists name them again, in words.
PERMISSION_ACTIONS = {
    "add": gettext_lazy("Can add %(name)s"),
    "change": gettext_lazy("Can change %(name)s"),
    "delete": gettext_lazy("Can delete %(name)s"),
    "view": gettext_lazy("Can view %(name)s"),
}


def permission_label(permission: Any) -> str:
    """ "Agentes | agente | Puede agregar agente": a default permission in the reader's words;
    one of a model's own ("Can approve…") as it was written."""
    action, _, model_name = permission.codename.partition("_")
    model = permission.content_type.model_class()
    name = permission.name
    if action in PERMISSION_ACTIONS and model is not None and model_name == model._meta.model_name:
        name = str(PERMISSION_ACTIONS[action]) % {"name": model._meta.verbose_name}
    return f"{permission.content_type} | {name}"


def adopt() -> None:
    """Give the libraries' models the texts above (CapatazConfig.ready)."""
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog
    from django_celery_beat.models import CrontabSchedule

    CrontabSchedule.human_readable = property(_crontab_human_readable)  # type: ignore[assignment,method-assign]
    AccessAttempt.__str__ = _attempt  # type: ignore[method-assign,assignment]
    AccessFailureLog.__str__ = _failure  # type: ignore[method-assign,assignment]
    AccessLog.__str__ = _log  # type: ignore[method-assign,assignment]
