"""The CopilotPanel pages: the conversation list, a new conversation, one conversation — and the
suggestions the proactive schedules leave (list, accept, dismiss)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import get_language, gettext
from django.views.decorators.http import require_POST

from agents.models import Agent, Suggestion
from agents.proactive import why
from agents.proactive.selectors import (
    acceptance_by_kind,
    get_suggestion_for_org,
    open_suggestions,
    settled_by,
)
from agents.proactive.services import suggestion_claim
from agents.proactive.services import suggestion_dismiss as suggestion_dismiss_service
from business.hygiene import text_problem
from business.roles import can, permission_required
from business.scheduling import Slot, next_free_slots
from business.services import service_duration
from copilot import tasks, tryout
from copilot.intake import accept_suggestion
from copilot.memory_view import memory_lines
from copilot.models import Conversation, Message, Turn
from copilot.orchestration import direct_line
from copilot.selectors import (
    conversations_for_user,
    get_conversation_for_user,
    readable_conversations,
    replay_from,
    whatsapp_conversations,
)
from copilot.services import conversation_create
from copilot.trace_browser import conversation_turns, turn_counts, turn_view

TRACE_PAGE = 30


@permission_required("chat")
def chat_index(request: HttpRequest) -> HttpResponse:
    latest = conversations_for_user(request.user, request.organisation).first()  # type: ignore[attr-defined]
    if latest is not None:
        # "Book here" from the Agenda: the message to prefill goes along (static/js/panel.js).
        prefill = request.GET.get("prefill", "")[:300]
        query = f"?{urlencode({'prefill': prefill})}" if prefill else ""
        return redirect(reverse("chat_detail", args=[latest.pk]) + query)
    whatsapp = whatsapp_conversations(request.user, request.organisation)[:30]  # type: ignore[attr-defined]
    context: dict[str, Any] = {"conversations": [], "conversation": None}
    context["whatsapp_conversations"] = whatsapp
    return render(request, "copilot/chat.html", context)


@require_POST
@permission_required("chat")
def chat_new(request: HttpRequest) -> HttpResponse:
    conversation = conversation_create(
        organisation=request.organisation,  # type: ignore[attr-defined]
        user=request.user,  # type: ignore[arg-type]
    )
    return redirect("chat_detail", conversation_id=conversation.pk)


@permission_required("chat")
def chat_detail(request: HttpRequest, conversation_id: int) -> HttpResponse:
    try:
        conversation, read_only = get_conversation_for_user(request.user, conversation_id)
    except Conversation.DoesNotExist as exc:
        raise Http404 from exc
    if request.GET.get("part") == "whatsapp" and conversation.channel == "whatsapp":
        # The takeover controls alone (static/js/whatsapp.js reloads them when the mode changes).
        return render(
            request, "copilot/_whatsapp_controls.html",
            {"conversation": conversation, "max_chars": settings.COPILOT_MAX_MESSAGE_CHARS},
        )  # fmt: skip
    language = request.LANGUAGE_CODE[:2]
    enabled = _enabled(conversation)  # one read of the organisation's agents for both uses
    consultable = _labelled(enabled, language)
    context = {
        "conversation": conversation,
        # A supervisor reads a member's conversation: labelled as such, with no composer.
        "read_only": read_only,
        "owner_name": _owner_name(conversation),
        "conversations": conversations_for_user(request.user, conversation.organisation)[:30],
        "whatsapp_conversations": whatsapp_conversations(request.user, conversation.organisation)[
            :30
        ],
        # Not "messages": that name is Django's flash messages, which base.html renders.
        # A WhatsApp reply carries its outbox row: the panel shows whether it reached the customer.
        "chat_messages": conversation.messages.select_related("outgoing"),
        "max_chars": settings.COPILOT_MAX_MESSAGE_CHARS,
        "replay_from": replay_from(conversation),
        # The working memory in the reader's words (the stored summary is the model's).
        "memory": memory_lines(conversation),
        "direct_line": _direct_line(conversation, enabled, language),
        # The agents an operator may tick for a message to consult (T3), and their labels for the
        # live steps (copilot/_answers_live.html): the screen's language, not the message's.
        "consultable": consultable,
        "consultable_labels": dict(consultable),
    }
    return render(request, "copilot/chat.html", context)


@permission_required("chat")
def chat_answer(request: HttpRequest, conversation_id: int, turn_id: str) -> HttpResponse:
    """A turn's answers as the page renders them (copilot/_answer.html), for the live panel to
    put in place of what it streamed: the same HTML before and after a reload."""
    try:
        conversation, _read_only = get_conversation_for_user(request.user, conversation_id)
    except Conversation.DoesNotExist as exc:
        raise Http404 from exc
    answers = conversation.messages.filter(
        role=Message.Role.ASSISTANT, trace__turn_id=turn_id
    ).order_by("pk")
    if not answers:
        raise Http404
    # The steps name their agents in the screen's language, as on the page (copilot/_answer.html).
    consultable = _labelled(_enabled(conversation), request.LANGUAGE_CODE[:2])
    return render(
        request, "copilot/_answers.html", {"answers": answers, "consultable": consultable}
    )


def _enabled(conversation: Conversation) -> list[Agent]:
    return list(
        Agent.objects.filter(organisation_id=conversation.organisation_id, enabled=True).order_by(
            "name"
        )
    )


def _labelled(agents: list[Agent], language: str) -> list[tuple[str, str]]:
    """(name, label in the screen's language) of each agent: the ticks and the live steps."""
    return [(agent.name, agent.label(language)) for agent in agents]


def _direct_line(
    conversation: Conversation, enabled: list[Agent], language: str
) -> dict[str, str] | None:
    """The agent the conversation's direct line is open to (T2), for the panel's indicator."""
    name = (conversation.state or {}).get(direct_line.STATE_KEY)
    agent = next((a for a in enabled if a.name == name), None) if name else None
    if agent is None:
        return None
    return {"agent": agent.name, "label": agent.label(language)}


def _owner_name(conversation: Conversation) -> str:
    """Whose conversation it is, for the supervision banner: the member, or else its channel."""
    owner = conversation.user
    if owner is None:
        return str(conversation.get_channel_display())
    return owner.get_full_name() or owner.get_username()


# --- Suggestions (P2): the schedules' proposals, accepted or dismissed -------------------------

SUGGESTIONS_SHOWN = 20
SLOTS_OFFERED = 3
SETTLED_SHOWN = 3  # the person's own latest accepted or dismissed cards, kept in the list


@dataclass(frozen=True)
class SuggestionRow:
    suggestion: Suggestion
    reason: str
    action: str
    settled: str  # what happened to it ("" while it waits)


def _rows(suggestions: Iterable[Suggestion]) -> list[SuggestionRow]:
    waiting = Suggestion.State.NEW
    return [
        SuggestionRow(s, why.reason(s), why.action(s), why.settled(s) if s.state != waiting else "")
        for s in suggestions
    ]


def _suggestion(request: HttpRequest, pk: int) -> Suggestion:
    """The current organisation's suggestion; 404 for anyone else's (or none)."""
    try:
        return get_suggestion_for_org(request.organisation, pk)  # type: ignore[attr-defined]
    except Suggestion.DoesNotExist as exc:
        raise Http404 from exc


@permission_required("chat")
def suggestions(request: HttpRequest) -> HttpResponse:
    """The open suggestions (the page; `?part=list` or `?part=badge` for the dashboard's and
    the panel's htmx loads); managers also see the acceptance rate per kind."""
    organisation = request.organisation  # type: ignore[attr-defined]
    waiting = open_suggestions(organisation)
    part = request.GET.get("part", "")
    if part == "badge":  # polled every 30 s by every open panel: the count only
        return render(request, "copilot/suggestions.html#badge", {"total": waiting.count()})
    managing = can(getattr(request, "membership", None), "view_metrics")
    context = {
        "rows": _rows(waiting[:SUGGESTIONS_SHOWN]),
        "settled": _rows(settled_by(organisation, request.user)[:SETTLED_SHOWN]),
        "total": waiting.count(),
        "rates": acceptance_by_kind(organisation) if managing else None,
    }
    if part == "list":
        return render(request, "copilot/suggestions.html#list", context)
    return render(request, "copilot/suggestions.html", context)


def _slots(suggestion: Suggestion) -> list[Slot]:
    """Concrete slots for a proposed booking: the next free ones for its trade, near the
    customer's zone."""
    customer = suggestion.customer
    address = customer.addresses.filter(is_primary=True).first() if customer else None
    service = str(suggestion.arguments.get("service", ""))
    return next_free_slots(
        suggestion.organisation, skill=suggestion.arguments.get("skill"),
        zone=address.zone if address else None, duration=service_duration(service),
        count=SLOTS_OFFERED,
    )  # fmt: skip


def _chosen(suggestion: Suggestion, data: QueryDict, slots: list[Slot]) -> dict[str, Any] | None:
    """The arguments the call will run with, completed by the operator's choice; None when
    what they chose is not (or no longer) there."""
    arguments = dict(suggestion.arguments)
    if suggestion.tool == "job_book":
        picked = next((s for s in slots if s.start.isoformat() == data.get("start")), None)
        if picked is None:
            return None
        arguments.update(start=picked.start.isoformat(), technician_id=picked.technician.pk)
    elif suggestion.tool == "follow_up_record":
        arguments["note"] = data.get("note", "").strip() or gettext("Called after the job.")
    return arguments


@permission_required("chat")
def suggestion_accept(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: what accepting will do (a booking's concrete slots to pick from). POST: claimed
    once (new → accepted), then its call runs as a turn of a new conversation."""
    suggestion = _suggestion(request, pk)
    template = "copilot/suggestions.html#accept"
    context: dict[str, Any] = {"row": _rows([suggestion])[0]}
    if request.method == "POST" and suggestion.state != Suggestion.State.NEW:
        return _decided(request, suggestion)  # a second click
    slots = _slots(suggestion) if suggestion.tool == "job_book" else []
    context["slots"] = slots
    if request.method != "POST":
        return _step(request, template, context, "accept")
    arguments = _chosen(suggestion, request.POST, slots)
    if arguments is None:
        context["problem"] = gettext("That time is no longer free: pick another one.")
        return _step(request, template, context, "accept", status=409)
    with transaction.atomic():
        if suggestion_claim(suggestion=suggestion, user=request.user, arguments=arguments):
            note = gettext("Suggestion accepted: %(action)s. %(reason)s") % {
                "action": why.action(suggestion), "reason": why.reason(suggestion)
            }  # fmt: skip
            conversation = accept_suggestion(
                suggestion, user=request.user, note=note, language=get_language()[:2]
            )
            conversation_id = conversation.pk
            organisation_id = suggestion.organisation_id
            transaction.on_commit(lambda: tasks.dispatch(organisation_id, conversation_id))
    suggestion.refresh_from_db()
    return _decided(request, suggestion)


def _step(
    request: HttpRequest, template: str, context: dict[str, Any], step: str, status: int = 200
) -> HttpResponse:
    """The accept or dismiss step: the row's fragment for htmx, a page of its own for a plain
    link (no JavaScript)."""
    if request.htmx:  # type: ignore[attr-defined]
        return render(request, template, context, status=status)
    page = "copilot/suggestion_step.html"
    return render(request, page, {**context, "step": step}, status=status)


def _decided(request: HttpRequest, suggestion: Suggestion) -> HttpResponse:
    """The decided row for htmx; back to the list for a plain form, where it shows on top."""
    if request.htmx:  # type: ignore[attr-defined]
        return render(request, "copilot/suggestions.html#row", {"row": _rows([suggestion])[0]})
    return redirect("suggestions")


@permission_required("chat")
def suggestion_dismiss(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the optional reason. POST: new → dismissed, once."""
    suggestion = _suggestion(request, pk)
    if request.method != "POST":
        context = {"row": _rows([suggestion])[0]}
        return _step(request, "copilot/suggestions.html#dismiss", context, "dismiss")
    suggestion_dismiss_service(
        suggestion=suggestion, user=request.user, reason=request.POST.get("reason", "")
    )
    suggestion.refresh_from_db()
    return _decided(request, suggestion)


# --- the trace browser (D5): managers and admins read what a turn understood and did -----------


@permission_required("supervise_conversations")
def trace_index(request: HttpRequest) -> HttpResponse:
    conversations = turn_counts(
        readable_conversations(request.user, request.organisation)  # type: ignore[attr-defined]
    ).select_related("user")
    page = Paginator(conversations, TRACE_PAGE).get_page(request.GET.get("page"))
    htmx = request.htmx  # type: ignore[attr-defined]
    partial = bool(htmx) and not htmx.history_restore_request
    template = "copilot/traces.html#rows" if partial else "copilot/traces.html"
    return render(request, template, {"page": page})


@permission_required("supervise_conversations")
def trace_conversation(request: HttpRequest, conversation_id: int) -> HttpResponse:
    try:
        conversation, _read_only = get_conversation_for_user(request.user, conversation_id)
    except Conversation.DoesNotExist as exc:
        raise Http404 from exc
    if conversation.organisation_id != request.organisation.pk:  # type: ignore[attr-defined]
        raise Http404
    turns = conversation_turns(conversation)
    return render(
        request,
        "copilot/trace_conversation.html",
        {"conversation": conversation, "turns": turns, "owner_name": _owner_name(conversation)},
    )


@permission_required("supervise_conversations")
def trace_turn(request: HttpRequest, turn_id: str) -> HttpResponse:
    organisation = request.organisation  # type: ignore[attr-defined]
    try:
        turn = Turn.objects.select_related("message", "answer", "conversation", "user").get(
            pk=turn_id, organisation=organisation
        )
        get_conversation_for_user(request.user, turn.conversation_id)
    except (Turn.DoesNotExist, Conversation.DoesNotExist, ValidationError) as exc:
        raise Http404 from exc
    return render(request, "copilot/trace_turn.html", {"view": turn_view(turn)})


# --- try an utterance (D1): what the engine understands and would do, writing nothing ----------


@permission_required("edit_agents")
def try_view(request: HttpRequest) -> HttpResponse:
    """The registry-wide box, and the agent page's (which sends its unsaved form along)."""
    text = str(request.POST.get("text") or request.GET.get("text") or "")
    tried, problem = None, ""
    if request.method == "POST" and text.strip():
        if text_problem(text) is not None or len(text) > tryout.MAX_TEXT:
            problem = gettext("That text cannot be tried: too long, or invalid characters.")
        else:
            edits = tryout.edits_from_form(request.POST) if request.POST.get("with_edits") else None
            try:
                tried = tryout.try_utterance(
                    request.organisation,  # type: ignore[attr-defined]
                    request.user,
                    text,
                    edits=edits,
                )
            except tryout.NothingToTry:
                problem = gettext(
                    "The registry needs examples of at least two intents of enabled agents "
                    "before anything can be understood."
                )
    htmx = request.htmx  # type: ignore[attr-defined]
    partial = bool(htmx) and not htmx.history_restore_request
    template = "copilot/try.html#result" if partial else "copilot/try.html"
    return render(request, template, {"text": text, "tried": tried, "problem": problem})
