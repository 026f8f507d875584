"""Forms of the record pages. Filters are GET forms: a bad value is ignored, never an error page."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django import forms
from django.http import QueryDict
from django.utils.translation import gettext_lazy as _

from business.models import CustomerProfile, Job, Organisation, Technician
from business.selectors import scoped


@dataclass(frozen=True)
class JobFilters:
    first: datetime.date
    days: int
    technician: Technician | None
    status: str

    @property
    def previous(self) -> datetime.date:
        return self.first - datetime.timedelta(days=self.days)

    @property
    def next(self) -> datetime.date:
        return self.first + datetime.timedelta(days=self.days)

    @property
    def last(self) -> datetime.date:
        return self.first + datetime.timedelta(days=self.days - 1)


class JobFilterForm(forms.Form):
    SPANS = {"day": 1, "week": 7}
    # The calendar's reach: a date past it (9999-12-31) would overflow the week's arithmetic.
    FIRST_DAY, LAST_DAY = datetime.date(1900, 1, 1), datetime.date(2999, 12, 31)

    date = forms.DateField(
        label=_("From"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
    )
    span = forms.ChoiceField(
        label=_("Period"),
        required=False,
        choices=[("day", _("Day")), ("week", _("Week"))],
    )
    technician = forms.ModelChoiceField(
        label=_("Technician"),
        required=False,
        queryset=Technician.objects.none(),
        empty_label=_("All technicians"),
    )
    status = forms.ChoiceField(
        label=_("Status"),
        required=False,
        choices=[("", _("Any status")), *Job.Status.choices],
    )

    def __init__(
        self, data: QueryDict, *, organisation: Organisation, today: datetime.date
    ) -> None:
        # Defaults go into the data so the form shows them (a bound form ignores `initial`).
        data = data.copy()
        data.setdefault("date", today.isoformat())
        data.setdefault("span", "week")
        super().__init__(data)
        self.today = today
        # Only this organisation's technicians are valid choices: a foreign id is just invalid.
        technician = self.fields["technician"]
        assert isinstance(technician, forms.ModelChoiceField)
        technician.queryset = scoped(Technician, organisation).filter(active=True)

    def clean_date(self) -> datetime.date | None:
        value: datetime.date | None = self.cleaned_data.get("date")
        if value is not None and not self.FIRST_DAY <= value <= self.LAST_DAY:
            raise forms.ValidationError(
                _("Pick a date between %(first)s and %(last)s."),
                code="out_of_range",
                params={"first": self.FIRST_DAY.year, "last": self.LAST_DAY.year},
            )
        return value

    def filters(self) -> JobFilters:
        """The valid part of the query; anything invalid falls back to its default."""
        self.is_valid()
        data = self.cleaned_data
        return JobFilters(
            first=data.get("date") or self.today,
            days=self.SPANS.get(data.get("span") or "week", 7),
            technician=data.get("technician"),
            status=data.get("status") or "",
        )


PROFILE_LABELS = {
    "preferred_days": _("Preferred days"),
    "preferred_time": _("Preferred time"),
    "channel": _("Contact channel"),
    "language": _("Language"),
    "register": _("Register (voseo, usted, tuteo)"),
    "brevity": _("Message length"),
    "equipment": _("Equipment"),
    "address_notes": _("Address notes"),
    "payment": _("Payment behaviour"),
    "sensitivities": _("Sensitivities"),
}


class CustomerProfileForm(forms.Form):
    """A manager's corrections to a customer profile: one text per field; empty removes it."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        for name in CustomerProfile.FIELDS:
            self.fields[name] = forms.CharField(
                label=PROFILE_LABELS[name], max_length=200, required=False
            )
