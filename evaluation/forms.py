"""The evaluation pages' forms: a case (checked against the registry like an imported line), an
import, a new dataset, a run."""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agents.models import Agent
from business.hygiene import text_problem
from business.models import Organisation
from evaluation import jsonlines
from evaluation.datasets import MAX_INPUT, case_json, case_problems, registry_of
from evaluation.models import Case, Dataset
from evaluation.reading import ENGINES

MAX_UPLOAD = 5 * 1024 * 1024
_WORDS = re.compile(r"[\s,]+")


def _names(value: str) -> list[str]:
    return [word for word in _WORDS.split(value.strip()) if word]


class CaseForm(forms.Form):
    input = forms.CharField(label=gettext_lazy("Input"), widget=forms.Textarea(attrs={"rows": 3}),
                            max_length=MAX_INPUT)  # fmt: skip
    expected_intents = forms.CharField(
        label=gettext_lazy("Expected intents"),
        help_text=gettext_lazy("In the order they run, separated by spaces or commas."),
    )
    expected_agents = forms.CharField(
        label=gettext_lazy("Expected agents"), required=False,
        help_text=gettext_lazy("One per intent, in the same order; empty: each intent's owner."),
    )  # fmt: skip
    expected_entities = forms.CharField(
        label=gettext_lazy("Expected entities"), required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=gettext_lazy('A JSON object, e.g. {"customer": "Juan Pérez", "date": '
                               '"2026-11-24", "time": "10:00"}.'),
    )  # fmt: skip
    lang = forms.CharField(label=gettext_lazy("Language"), required=False, max_length=5)
    tags = forms.CharField(label=gettext_lazy("Tags"), required=False)

    def __init__(self, *args: Any, organisation: Organisation, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.organisation = organisation
        self.data_json: dict[str, Any] = {}

    @classmethod
    def initial_for(cls, case: Case) -> dict[str, Any]:
        data = case_json(case)
        return {
            "input": case.input,
            "expected_intents": " ".join(case.expected_intents),
            "expected_agents": " ".join(case.expected_agents),
            "expected_entities": json.dumps(data.get("expected_entities", {}), ensure_ascii=False)
            if case.expected_entities
            else "",
            "lang": case.lang,
            "tags": ", ".join(case.tags),
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        if text_problem(cleaned["input"]) is not None:
            self.add_error("input", _("The text has characters that cannot be stored."))
            return cleaned
        entities: Any = {}
        if cleaned.get("expected_entities", "").strip():
            try:
                entities = jsonlines.loads(cleaned["expected_entities"])
            except ValueError:
                self.add_error("expected_entities", _("Not valid JSON."))
                return cleaned
        data = {
            "input": cleaned["input"],
            "expected_intents": _names(cleaned["expected_intents"]),
            "expected_agents": _names(cleaned.get("expected_agents", "")),
            "expected_entities": entities,
            "lang": cleaned.get("lang", "").strip(),
            "tags": [t.strip() for t in cleaned.get("tags", "").split(",") if t.strip()],
        }
        for problem in case_problems(data, registry_of(self.organisation)):
            self.add_error(None, problem)
        self.data_json = data
        return cleaned


class ImportForm(forms.Form):
    file = forms.FileField(label=gettext_lazy("JSONL file"), required=False)
    text = forms.CharField(label=gettext_lazy("…or paste the lines"), required=False,
                           widget=forms.Textarea(attrs={"rows": 4}))  # fmt: skip
    replace = forms.BooleanField(label=gettext_lazy("Replace the dataset's cases"), required=False)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        upload = cleaned.get("file")
        if upload is not None:
            if upload.size > MAX_UPLOAD:
                raise forms.ValidationError(_("The file is larger than 5 MB."))
            try:
                cleaned["content"] = upload.read().decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise forms.ValidationError(_("The file is not UTF-8 text.")) from exc
        else:
            cleaned["content"] = cleaned.get("text", "")
        if not cleaned["content"].strip():
            raise forms.ValidationError(_("Choose a file or paste its lines."))
        if "\x00" in cleaned["content"]:
            raise forms.ValidationError(_("The file has a NUL character."))
        return cleaned


class DatasetForm(forms.Form):
    name = forms.CharField(label=gettext_lazy("Name"), max_length=80)
    agent = forms.ModelChoiceField(
        label=gettext_lazy("Agent partition"), queryset=Agent.objects.none(), required=False,
        empty_label=gettext_lazy("— golden (every agent) —"),
    )  # fmt: skip

    def __init__(self, *args: Any, organisation: Organisation, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["agent"].queryset = Agent.objects.filter(organisation=organisation)  # type: ignore[attr-defined]


class RunForm(forms.Form):
    dataset = forms.ModelChoiceField(label=gettext_lazy("Dataset"), queryset=Dataset.objects.none())
    engine = forms.ChoiceField(
        label=gettext_lazy("Engine"),
        choices=[(e, Organisation.Engine(e).label) for e in ENGINES],  # lazy: the reader's words
    )
    version = forms.ChoiceField(label=gettext_lazy("Agent configuration"), required=False)
    reference_date = forms.DateField(
        label=gettext_lazy("Reference date"), required=False,
        help_text=gettext_lazy("Empty: the dataset's own, else today."),
        widget=forms.DateInput(attrs={"type": "date"}),
    )  # fmt: skip

    def __init__(self, *args: Any, organisation: Organisation, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["dataset"].queryset = Dataset.objects.filter(organisation=organisation)  # type: ignore[attr-defined]
        choices: list[tuple[str, str]] = [("", _("The registry as it is now"))]
        for agent in Agent.objects.filter(organisation=organisation).prefetch_related("versions"):
            for version in agent.versions.all():
                label = f"{agent.name} v{version.number}"
                if version.note:
                    label += f" — {version.note}"
                choices.append((f"{agent.pk}:{version.number}", label))
        self.fields["version"].choices = choices  # type: ignore[attr-defined]
        self.organisation = organisation

    def agent_version(self) -> tuple[Agent | None, int | None]:
        value = self.cleaned_data.get("version") or ""
        if not value:
            return None, None
        agent_id, number = value.split(":")
        agent = Agent.objects.get(organisation=self.organisation, pk=int(agent_id))
        return agent, int(number)
