"""Handlers of the customer agent (O11): register, find and update customers; check CUITs.

The router gives the name and the CUIT as entities; phone, email and address are read here
from the step's own text, with the cue words an operator uses ("tel", "vive en", "mail").
An invalid CUIT is explained (length, prefix, or which check digit was expected) and nothing
is written with it.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import fields as dataclass_fields
from typing import Any
from zoneinfo import ZoneInfo

from django.utils.translation import gettext_lazy as _

from agents.base import Mutation, Outcome, Runner, Step, handles
from agents.customer.tools import (
    DUPLICATE,
    CuitCheck,
    CustomerCreated,
    CustomerUpdated,
)
from agents.payloads import CustomerFile, CustomerRow, CustomersFound, JobRow
from agents.phrasing import (
    answer_of,
    answered,
    ask,
    bullets,
    call_for_customer,
    choose,
    customer_candidate,
    customer_problem,
    failed,
    full_date,
    held,
    held_id,
    job_line,
    money,
    service_reason,
    with_note,
)
from agents.registry import ToolResult
from agents.subjects import CustomerRef, customer_ref
from business.models import Customer
from business.selectors import scoped
from business.validators import format_phone
from common.text import fold
from nlu.cuit import find_cuit
from nlu.finding import asks_to_find, same_or_new

LISTED = 5  # customers listed when a search matches several
OPEN = ("scheduled", "in_progress")

_CUIT_SHAPE = re.compile(r"(?<![\d.])\d{2}[-\s.]?\d{6,9}[-\s.]?\d(?![\d])")
_LOOSE_CUIT = re.compile(r"\b(?:cuit|cuil)\b\D{0,12}(\d[\d\s.\-/]{6,16}\d)", re.IGNORECASE)
_PHONE = re.compile(r"(?<![\w+])\+?\(?\d[\d\s().\-/]{6,18}\d(?!\w)")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_STREET_WORD = r"(?:Av(?:da)?\.?|Avenida|Calle|Pje\.?|Pasaje|Bv\.?|Boulevard|Diagonal|Ruta)"
_UPPER = "A-ZÁÉÍÓÚÑ"
_WORDISH = r"[\wÁÉÍÓÚÑáéíóúñ.'°º ]"
# After the street: an optional floor/unit, an optional ", City", then the end of the address.
_TAIL = (
    r"(?:\s*,?\s*(?P<unit>(?:(?:piso|dto|depto|departamento|apt|unit)\.?\s*\w+\s*)+))?"
    rf"(?:\s*,\s*(?P<city>[{_UPPER}][\w{_UPPER}áéíóúñ. ]*?))?"
    r"(?=\s*(?:[,;\n]|\.(?:\s|$)|$)|\s+(?:y|and|tel\w*|cel\w*|cuit|cuil|mail|email|correo|"
    r"phone)\b)"
)
_STREET = rf"(?P<street>(?:{_STREET_WORD}\s+)?[{_UPPER}0-9]{_WORDISH}*?\s\d{{1,5}})"
_ADDRESS_PATTERNS = (
    # "en Av. Mitre 1234, Lanús", "dirección: Corrientes 1234", "lives at Mitre 55"
    re.compile(
        r"(?i:\b(?:en|calle|direcci[oó]n(?:\s+es)?|domicilio(?:\s+es)?|address(?:\s+is)?|at|"
        rf"lives at|vive en|se mud[oó] a|moved to))\s*:?\s+{_STREET}{_TAIL}"
    ),
    # "lives at 2100 Santa Fe Ave, CABA", "address: 12 Main St": English puts the number first.
    re.compile(
        r"(?i:\b(?:address|at|on|lives at|lives on|moved to)(?:\s+is)?)\s*:?\s+"
        rf"(?P<street>\d{{1,5}}\s+[{_UPPER}][\w'.]*(?:\s+[{_UPPER}][\w'.]*){{0,3}}\s+"
        r"(?:St|Street|Ave|Avenue|Rd|Road|Blvd|Boulevard|Dr|Drive|Ln|Lane|Way|Pl|Place|Ct)\b\.?)"
        rf"{_TAIL}"
    ),
    # "Av. Mitre 1234" anywhere: the street word says it is an address.
    re.compile(rf"(?<!\w)(?P<street>{_STREET_WORD}\s+[{_UPPER}0-9]{_WORDISH}*?\s\d{{1,5}}){_TAIL}"),
)
# An update names the field first: "cambiá la dirección de Juan a Corrientes 1234".
_CONNECTED_ADDRESS = re.compile(rf"(?i:\b(?:a|por|es|to|is))\s*:?\s+{_STREET}{_TAIL}")
_NAME_CUE = re.compile(
    r"(?i:cliente(?:\s+nuevo)?|registr\w*(?:\s+a)?|(?:dar|d[aá]|dame)\s+de\s+alta\s+a|"
    r"alta\s+(?:a|de)|new customer|register|add)\s*:?\s+"
    rf"(?P<name>[{_UPPER}][\w'.&-]*(?:\s+(?:de|del|la|[{_UPPER}][\w'.&-]*))*)"
)
_COMPANY = re.compile(r"\b(?:s\.?a\.?|s\.?r\.?l\.?|s\.?a\.?s\.?|hnos\.?|inc\.?|ltd\.?)$", re.I)
FIELD_NAMES = {
    "cuit": _("CUIT"),
    "phone": _("phone"),
    "phone_alt": _("other phone"),
    "email": _("email"),
    "address": _("address"),
    "notes": _("notes"),
    "name": _("name"),
    "kind": _("kind of customer"),
}
ADDRESS_FIELDS = frozenset({"street", "unit", "city", "zone"})


# --- reading values from the text -----------------------------------------------------------


def _cuit_in(step: Step, *, any_shape: bool = False) -> str | None:
    """The CUIT the step mentions: the entity, an 11-digit number, the digits after "CUIT" —
    and with `any_shape` (validation) any CUIT-like number, so a wrong length can be explained.
    Elsewhere a bare 10-digit number is a phone, not a short CUIT."""
    if step.entities.cuit:
        return step.entities.cuit
    found = find_cuit(step.text)
    if found:
        return found
    loose = _LOOSE_CUIT.search(step.text)
    if loose is not None:
        return loose.group(1).strip()
    shaped = _CUIT_SHAPE.search(step.text) if any_shape else None
    return shaped.group(0) if shaped else None


def _phone_in(text: str) -> str | None:
    without = _LOOSE_CUIT.sub(" ", _CUIT_SHAPE.sub(" ", _EMAIL.sub(" ", text)))
    for match in _PHONE.finditer(without):
        digits = re.sub(r"\D", "", match.group(0))
        if 8 <= len(digits) <= 13:
            return match.group(0).strip()
    return None


def _email_in(text: str) -> str | None:
    match = _EMAIL.search(text)
    return match.group(0).rstrip(".") if match else None


def _address_in(text: str, *, connected: bool = False) -> dict[str, str]:
    """street / unit / city as written ({} when the text gives no street and number)."""
    patterns = (*_ADDRESS_PATTERNS, _CONNECTED_ADDRESS) if connected else _ADDRESS_PATTERNS
    for pattern in patterns:
        match = pattern.search(text)
        if match is not None:
            groups = match.groupdict()
            return {k: " ".join(v.split()).strip(" .") for k, v in groups.items() if v}
    return {}


def _name_in(step: Step) -> str | None:
    if step.entities.customer:
        return step.entities.customer.strip()
    match = _NAME_CUE.search(step.text)
    if match is None:
        return None
    words = match.group("name").split()
    while words and fold(words[-1]) in {"de", "del", "la", "y"}:
        words.pop()
    return " ".join(words) or None


def _kind(name: str, cuit: str | None) -> str:
    digits = re.sub(r"\D", "", cuit or "")
    if _COMPANY.search(name.strip()) or digits[:1] == "3":
        return "company"
    return "person"


def _field_label(runner: Runner, field: str) -> str:
    label = FIELD_NAMES.get("address" if field in ADDRESS_FIELDS else field)
    return field if label is None else runner.say(label)


# --- create_customer ------------------------------------------------------------------------


@handles("create_customer")
def create_customer(step: Step, runner: Runner) -> Outcome:
    if not step.resumed and asks_to_find(step.text):
        # A search phrasing never creates, whatever read it as a registration.
        return search_customer(step, runner)
    name = _name_in(step)
    if not name:
        return ask(
            runner,
            runner.say(
                _("What is the new customer's name? You can also give me phone, address and CUIT.")
            ),
            error="missing name",
        )
    cuit = _cuit_in(step)
    if cuit:
        result = runner.call("cuit_check", cuit=cuit)
        if (check := CuitCheck.of(result)) is None:
            return failed(runner, result, runner.say(_("I couldn't check the CUIT")))
        if not check.valid:
            reason = _cuit_reason(runner, check)
            return Outcome(
                text=runner.say(
                    _(
                        "I didn't register %(name)s: CUIT %(cuit)s is not valid (%(reason)s). "
                        "Please check it and I'll register them."
                    ),
                    name=name,
                    cuit=check.cuit,
                    reason=reason,
                ),
                success=False,
                error=f"invalid cuit: {check.problem}",
            )
    fields: dict[str, Any] = _contact_fields(step.text, name, cuit)
    said = same_or_new(answer_of(step))
    if said == "new":
        fields["confirmed_new"] = True  # the operator said it is not the one on file
    result = runner.call("customer_create", name=name, **fields)
    if (approval := held_id(result)) is not None:
        return held(runner, approval, runner.say(_("Registering %(name)s"), name=name))
    if not result.ok and result.data.get("code") == DUPLICATE:
        return _on_file(step, runner, name, result.data["duplicates"], said)
    if (created := CustomerCreated.of(result)) is None:
        return _write_refused(
            runner, result, runner.say(_("I didn't register %(name)s"), name=name)
        )
    return _created(runner, created.customer)


def _contact_fields(text: str, name: str, cuit: str | None) -> dict[str, str]:
    fields: dict[str, str] = {"kind": _kind(name, cuit)}
    if cuit:
        fields["cuit"] = cuit
    if phone := _phone_in(text):
        fields["phone"] = phone
    if email := _email_in(text):
        fields["email"] = email
    fields.update(_address_in(text))
    return fields


def _created(runner: Runner, customer: CustomerRow) -> Outcome:
    details = _contact_summary(runner, customer)
    text = runner.say(
        _("Done: I registered %(name)s (customer #%(id)s)%(details)s."),
        name=customer.name,
        id=customer.id,
        details=details,
    )
    mutation = Mutation(
        kind="customer", id=customer.id, label=customer.name, data={"created": True}
    )
    return Outcome(text=text, mutations=[mutation])


# --- a likely duplicate: "¿es el mismo que…?" -----------------------------------------------

# Why a customer on file looks like the one to register.
_MATCHED = {
    "cuit": _("same CUIT"),
    "phone": _("same phone"),
    "name": _("similar name"),
    "address": _("same address"),
}


def _on_file(
    step: Step, runner: Runner, name: str, likely: list[dict[str, Any]], said: str | None
) -> Outcome:
    """The customer seems to be on file already: the operator's answer settles it — the one
    on file ("sí", "el segundo", "#12") or a new one ("no, es otro", handled by the caller) —
    else the question. Best effort with one candidate takes the one on file."""
    picked = answered(step, likely, customer_candidate)
    if picked is None and said == "same" and len(likely) == 1:
        picked = likely[0]
    if picked is not None:
        return _existing(runner, picked)
    if said == "same":
        listing = bullets(customer_candidate(c) for c in likely)
        return ask(
            runner,
            runner.say(_("Which of these is it?\n%(listing)s"), listing=listing),
            error="several customers on file",
            slot="customer_choice",
        )
    if runner.best_effort and len(likely) == 1:
        note = runner.say(
            _(
                "As it looks like the same one, I didn't register %(name)s. If it is another "
                "customer, ask me to register them and say it is a new one."
            ),
            name=name,
        )
        return with_note(_existing(runner, likely[0]), note)
    return _ask_same(runner, name, likely)


def _ask_same(runner: Runner, name: str, likely: list[dict[str, Any]]) -> Outcome:
    def why(customer: dict[str, Any]) -> str:
        return ", ".join(
            runner.say(_MATCHED[m]) for m in customer.get("matched", []) if m in _MATCHED
        )

    if len(likely) == 1:
        one = likely[0]
        return ask(
            runner,
            runner.say(
                _(
                    "Is this the same as %(candidate)s? They are already on file (%(why)s), so "
                    "I haven't registered %(name)s yet. Say “yes” and I'll use that one, or "
                    "“it's a new one” and I'll register them."
                ),
                candidate=customer_candidate(one),
                why=why(one),
                name=name,
            ),
            error="possible duplicate",
            slot="duplicate",
        )
    listing = bullets(f"{customer_candidate(c)} ({why(c)})" for c in likely)
    return ask(
        runner,
        runner.say(
            _(
                "I haven't registered %(name)s yet: similar customers are already on file:\n"
                "%(listing)s\nIs it one of these? Tell me which, or say “it's a new one” and "
                "I'll register them."
            ),
            name=name,
            listing=listing,
        ),
        error="possible duplicate",
        slot="duplicate",
    )


def _existing(runner: Runner, customer: dict[str, Any]) -> Outcome:
    """The customer on file is the one: later steps work with them; nothing is created."""
    text = runner.say(
        _(
            "OK: I'll use %(name)s (customer #%(id)s), who was already on file; I didn't "
            "register another one."
        ),
        name=customer["name"],
        id=customer["id"],
    )
    mutation = Mutation(
        kind="customer", id=int(customer["id"]), label=customer["name"], data={"created": False}
    )
    return Outcome(text=text, mutations=[mutation])


def _contact_summary(runner: Runner, customer: CustomerRow) -> str:
    parts = []
    if customer.phone:
        parts.append(runner.say(_("phone %(phone)s"), phone=format_phone(customer.phone)))
    if customer.email:
        parts.append(customer.email)
    if customer.address:
        parts.append(customer.address)
    if customer.cuit:
        parts.append(f"CUIT {customer.cuit}")
    return ": " + ", ".join(parts) if parts else ""


def _write_refused(runner: Runner, result: ToolResult, what: str) -> Outcome:
    """A create/update the service refused: which field and why, in the message's language
    (`what` could not be done, already in it)."""
    codes: dict[str, str] = result.data.get("codes") or {}
    field = next(iter(codes), "")
    label = _field_label(runner, field)
    if codes.get("zone") == "zone_unknown":
        why = runner.say(
            _(
                "I don't know which zone that locality is in: is it CABA, Norte, Sur, Oeste or "
                "La Plata?"
            )
        )
    elif codes.get("cuit") == "duplicate_cuit":
        why = (
            service_reason(runner, result, runner.say(_("Another customer already has that CUIT")))
            + "."
        )
    elif field:
        why = (
            service_reason(runner, result, runner.say(_("The %(label)s is not valid"), label=label))
            + "."
        )
    else:
        return failed(runner, result, what)
    return Outcome(text=f"{what}. {why}", success=False, error=result.error)


# --- search_customer ------------------------------------------------------------------------


@handles("search_customer")
def search_customer(step: Step, runner: Runner) -> Outcome:
    query = (
        step.entities.customer or step.entities.cuit or _email_in(step.text) or _phone_in(step.text)
    )
    if not query:
        who = customer_ref(step, runner)
        if who is None or who.id is None:
            return ask(
                runner,
                runner.say(
                    _("Which customer should I look up? Give me a name, phone, CUIT or street.")
                ),
                error="missing query",
            )
        return _show(runner, who.id)
    found, problem, note = _find_one(step, runner, query)
    if problem is not None or found is None:
        return problem or ask(runner, runner.say(_("Which customer?")), error="missing customer")
    return with_note(_show(runner, found.id), note)


def _find_one(
    step: Step, runner: Runner, query: str
) -> tuple[CustomerRow | None, Outcome | None, str]:
    """The one customer matching `query`, or the reply that stops the step, and the note of a
    best-effort pick. Several match: the operator's answer to the list names one, best effort
    takes the first ranked, otherwise the list is the question (O8). None: said so."""
    result = runner.call("customers_find", query=query)
    if (found := CustomersFound.of(result)) is None:
        refused = failed(runner, result, runner.say(_("I couldn't search customers")))
        return None, refused, ""
    customers = list(found.customers)
    exact = [c for c in customers if fold(c.name) == fold(query)]
    if len(exact) == 1 or len(customers) == 1:
        return (exact or customers)[0], None, ""
    if not customers:
        nobody = Outcome(
            text=runner.say(
                _("I found no customer matching “%(query)s”. Shall I register them?"),
                query=query,
            ),
            success=False,
            error="customer not found",
        )
        return None, nobody, ""
    listed = customers[:LISTED]
    choice = choose(
        step,
        runner,
        listed,
        customer_candidate,
        many=runner.say(_("several customers for “%(query)s”"), query=query),
    )
    if choice.picked is not None:
        return choice.picked, None, choice.note
    listing = bullets(customer_candidate(c) for c in listed)
    more = len(customers) > LISTED or found.truncated
    extra = "\n" + runner.say(_("(and more: narrow it down)")) if more else ""
    count = f"{len(customers)}+" if found.truncated else str(len(customers))
    question = ask(
        runner,
        runner.say(
            _("I found %(count)s customers for “%(query)s”:\n%(listing)s%(more)s\nWhich one?"),
            count=count,
            query=query,
            listing=listing,
            more=extra,
        ),
        error="several customers",
        slot="customer_choice",
    )
    return None, question, ""


def _show(runner: Runner, customer_id: int) -> Outcome:
    result = runner.call("customer_history", customer_id=customer_id)
    if (file := CustomerFile.of(result)) is None:
        return failed(runner, result, runner.say(_("I couldn't open the customer's file")))
    customer = file.customer
    text = runner.say(
        _("%(name)s (customer #%(id)s):\n%(lines)s"),
        name=customer.name,
        id=customer.id,
        lines=bullets(_file_lines(runner, file)),
    )
    mutation = Mutation(kind="customer", id=customer.id, label=customer.name)
    return Outcome(text=text, mutations=[mutation])


def _file_lines(runner: Runner, file: CustomerFile) -> list[str]:
    language = runner.language
    customer = file.customer
    none = runner.say(_("not on file"))
    phone = format_phone(customer.phone)
    lines = [
        runner.say(_("Phone: %(phone)s"), phone=phone or none),
        runner.say(_("Address: %(address)s"), address=customer.address or none),
    ]
    if customer.email:
        lines.append(f"Email: {customer.email}")
    if customer.cuit:
        lines.append(f"CUIT: {customer.cuit}")
    open_jobs = sorted((j for j in file.jobs if j.status in OPEN), key=_start)
    if open_jobs:
        listing = "; ".join(job_line(job.as_json(), language) for job in open_jobs)
        lines.append(runner.say(_("Open jobs: %(listing)s"), listing=listing))
    else:
        lines.append(runner.say(_("No open jobs")))
    done = [j for j in file.jobs if j.status == "done"]
    if done:
        last = max(done, key=_start)
        lines.append(
            runner.say(_("Last job done: %(job)s"), job=job_line(last.as_json(), language))
        )
    lines.append(_balance_line(runner, file))
    return lines


def _start(job: JobRow) -> datetime.datetime:
    return job.start


def _balance_line(runner: Runner, file: CustomerFile) -> str:
    language = runner.language
    owed = [i for i in file.invoices if i.state in ("unpaid", "partial")]
    if not owed:
        return runner.say(_("Paid up: owes nothing"))
    since = full_date(min(i.issued_on for i in owed), language)
    amount = money(file.balance, language)
    if len(owed) == 1:
        return runner.say(
            _("Owes %(amount)s (1 unpaid invoice, since %(since)s)"), amount=amount, since=since
        )
    return runner.say(
        _("Owes %(amount)s (%(n)s unpaid invoices, since %(since)s)"),
        amount=amount,
        n=len(owed),
        since=since,
    )


# --- update_customer ------------------------------------------------------------------------

_CUES = {
    "phone_alt": re.compile(
        r"\b(?:otro (?:tel|cel|numero)\w*|tel\w* alternativ\w*|(?:other|second|alternative) phone)"
    ),
    "phone": re.compile(r"\b(?:tel\w*|cel\w*|numero|whatsapp|wsp|movil|phone|number|mobile)\b"),
    "email": re.compile(r"\b(?:e?-?mail|correo)\b"),
    "address": re.compile(r"\b(?:direccion|domicilio|se mudo|mudaron|vive en|address|moved)\b"),
    "notes": re.compile(r"\b(?:nota|notas|anota\w*|observacion\w*|note|notes)\b"),
    "cuit": re.compile(r"\b(?:cuit|cuil)\b"),
}
_NOTE_VALUE = re.compile(
    r"\b(?:nota|notas|anot\w*|observaci\w+|note|notes)\b\s*(?:que|:|that|-)?\s*(?P<value>.+)$",
    re.IGNORECASE | re.DOTALL,
)


def _named_fields(step: Step) -> list[str]:
    """The fields the text talks about, from its cue words or the shape of a value."""
    folded = fold(step.text)
    named = [field for field, cue in _CUES.items() if cue.search(folded)]
    if "phone_alt" in named and "phone" in named:
        named.remove("phone")  # "otro teléfono" is the alternative one only
    if "email" not in named and _email_in(step.text):
        named.append("email")
    if "address" not in named and _address_in(step.text):
        named.append("address")
    return named


def _value_of(step: Step, field: str) -> dict[str, str]:
    if field in ("phone", "phone_alt"):
        phone = _phone_in(step.text)
        return {field: phone} if phone else {}
    if field == "email":
        email = _email_in(step.text)
        return {"email": email} if email else {}
    if field == "cuit":
        cuit = _cuit_in(step)
        return {"cuit": cuit} if cuit else {}
    if field == "address":
        return _address_in(step.text, connected=True)
    match = _NOTE_VALUE.search(step.text)
    return {"notes": match.group("value").strip()} if match else {}


def _changes_in(step: Step) -> tuple[dict[str, str], list[str]]:
    """(tool arguments to change, fields the text names without a value to set)."""
    changes: dict[str, str] = {}
    missing: list[str] = []
    for field in _named_fields(step):
        value = _value_of(step, field)
        if value:
            changes.update(value)
        else:
            missing.append(field)
    return changes, missing


@handles("update_customer")
def update_customer(step: Step, runner: Runner) -> Outcome:
    changes, missing = _changes_in(step)
    if not changes:
        return _ask_change(runner, missing)
    who = customer_ref(step, runner)
    if who is None:
        return ask(
            runner, runner.say(_("Whose details should I change?")), error="missing customer"
        )
    note = ""
    if "notes" in changes:
        # Appending needs the current notes, so the customer's id first.
        customer_id, problem, note = _customer_id(step, runner, who)
        if problem is not None or customer_id is None:
            return problem or ask(
                runner, runner.say(_("Which customer?")), error="missing customer"
            )
        who = CustomerRef(customer_id, who.name, who.source)
        changes["notes"] = _appended_note(runner, customer_id, changes["notes"])
    result, chosen, picked = call_for_customer(
        step, runner, "customer_update", {**who.args(), **changes}
    )
    if chosen is not None:
        who = CustomerRef(int(chosen["id"]), str(chosen["name"]), "named")
    return with_note(_update_result(runner, who, result, changes, missing), note or picked)


def _update_result(
    runner: Runner,
    who: CustomerRef,
    result: ToolResult,
    changes: dict[str, str],
    missing: list[str],
) -> Outcome:
    name = who.name or f"#{who.id}"
    if (approval := held_id(result)) is not None:
        return held(runner, approval, runner.say(_("Changing %(name)s's details"), name=name))
    if not result.ok:
        problem = customer_problem(runner, name, result)
        if problem is not None:
            return problem
        return _write_refused(
            runner, result, runner.say(_("I didn't change %(name)s's details"), name=name)
        )
    if (updated := CustomerUpdated.of(result)) is None:  # a screened-out result: nothing to say
        return failed(
            runner, result, runner.say(_("I didn't change %(name)s's details"), name=name)
        )
    return _updated(runner, updated, changes, missing)


def _ask_change(runner: Runner, missing: list[str]) -> Outcome:
    if missing:
        label = _field_label(runner, missing[0])
        return ask(
            runner,
            runner.say(_("What is the new %(label)s?"), label=label),
            error=f"missing value for {missing[0]}",
        )
    return ask(
        runner,
        runner.say(
            _("Which detail should I change? I can update phone, email, address, CUIT or notes.")
        ),
        error="missing field",
    )


def _customer_id(
    step: Step, runner: Runner, who: CustomerRef
) -> tuple[int | None, Outcome | None, str]:
    if who.id is not None:
        return who.id, None, ""
    found, problem, note = _find_one(step, runner, who.name)
    return (found.id if found else None), problem, note


def _appended_note(runner: Runner, customer_id: int, note: str) -> str:
    """The customer's notes with this one added. `customer_update` replaces the field and the
    tools' customer payload carries no notes, so they are read here (organisation-scoped):
    "anotá que…" means adding, never wiping what the office wrote before."""
    current = (
        scoped(Customer, runner.ctx.organisation)
        .filter(pk=customer_id)
        .values_list("notes", flat=True)
        .first()
    )
    local = runner.ctx.now.astimezone(ZoneInfo(runner.ctx.organisation.timezone))
    line = f"[{local:%d/%m/%Y}] {note.strip()}"
    return f"{current.strip()}\n{line}" if current and current.strip() else line


# The contact fields a customer's row shows (the others, e.g. phone_alt, are shown as sent).
_SHOWN = frozenset(field.name for field in dataclass_fields(CustomerRow))


def _updated(
    runner: Runner, updated: CustomerUpdated, sent: dict[str, str], missing: list[str]
) -> Outcome:
    customer, before = updated.customer, updated.before
    empty = runner.say(_("empty"))
    lines = []
    for field in dict.fromkeys("address" if f in ADDRESS_FIELDS else f for f in updated.changed):
        label = _field_label(runner, field)
        if field == "notes":
            lines.append(runner.say(_("%(label)s: note added"), label=label))
            continue
        if field in _SHOWN:
            lines.append(
                runner.say(
                    _("%(label)s: %(new)s (was %(old)s)"),
                    label=label,
                    new=getattr(customer, field) or empty,
                    old=getattr(before, field) or empty,
                )
            )
        else:
            lines.append(f"{label}: {sent.get(field) or empty}")
    text = runner.say(
        _("Done: I updated %(name)s:\n%(lines)s"), name=customer.name, lines=bullets(lines)
    )
    if missing:
        names = ", ".join(_field_label(runner, field) for field in missing)
        text += "\n" + runner.say(
            _("I didn't change %(names)s: I couldn't find the new value in the message."),
            names=names,
        )
    mutation = Mutation(kind="customer", id=customer.id, label=customer.name)
    return Outcome(text=text, mutations=[mutation])


# --- validate_cuit --------------------------------------------------------------------------


def _cuit_reason(runner: Runner, check: CuitCheck) -> str:
    problem = check.problem
    if problem == "length":
        return runner.say(_("it has %(length)s digits and a CUIT has 11"), length=check.length)
    if problem == "prefix":
        return runner.say(
            _(
                "it starts with %(prefix)s, and a CUIT starts with 20, 23, 24 or 27 (persons) or "
                "30, 33 or 34 (companies)"
            ),
            prefix=check.prefix,
        )
    if problem == "check_digit" and check.expected_check_digit is not None:
        return runner.say(
            _("the check digit is %(given)s but should be %(expected)s"),
            given=check.given_check_digit,
            expected=check.expected_check_digit,
        )
    if problem == "check_digit":
        return runner.say(
            _("no check digit fits those first ten digits (AFIP changes the prefix in that case)")
        )
    if problem in ("not_digits", "format"):
        return runner.say(_("it contains non-digits"))
    return runner.say(_("it is empty"))


@handles("validate_cuit")
def validate_cuit(step: Step, runner: Runner) -> Outcome:
    cuit = _cuit_in(step, any_shape=True)
    if not cuit:
        return ask(runner, runner.say(_("Which CUIT should I check?")), error="missing cuit")
    result = runner.call("cuit_check", cuit=cuit)
    if (check := CuitCheck.of(result)) is None:
        return failed(runner, result, runner.say(_("I couldn't check the CUIT")))
    if check.valid:
        if check.kind == "person":
            valid = _("CUIT %(cuit)s is valid (person).")
        else:
            valid = _("CUIT %(cuit)s is valid (company).")
        return Outcome(text=runner.say(valid, cuit=check.cuit))
    reason = _cuit_reason(runner, check)
    return Outcome(
        text=runner.say(
            _("CUIT %(cuit)s is not valid: %(reason)s."), cuit=check.cuit, reason=reason
        )
    )
