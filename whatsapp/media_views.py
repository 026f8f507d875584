"""A WhatsApp photo, voice note or document a customer sent (issue 14.5), served to who may read
its conversation (copilot/selectors.py `get_conversation_for_user`): anyone else — another
organisation's staff included — gets the same 404 as for a file that does not exist."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse

from business.roles import permission_required
from copilot.models import Conversation
from copilot.selectors import get_conversation_for_user
from whatsapp.models import IncomingMedia


@permission_required("chat")
def media_file(request: HttpRequest, media_id: int) -> HttpResponse:
    media = IncomingMedia.objects.filter(pk=media_id).exclude(file="").first()
    if media is None:
        raise Http404
    try:
        conversation, _read_only = get_conversation_for_user(request.user, media.conversation_id)
    except Conversation.DoesNotExist as exc:
        raise Http404 from exc
    if conversation.organisation_id != media.organisation_id:
        raise Http404
    try:  # at most WHATSAPP_*_MAX_BYTES (16 MB by default): read at once
        with media.file.open("rb") as handle:
            data = handle.read()
    except OSError as exc:  # the row outlived its file
        raise Http404 from exc
    response = HttpResponse(data, content_type=media.mime_type or "application/octet-stream")
    name = str(media.file.name or "").rsplit("/", 1)[-1]
    response["Content-Disposition"] = f'inline; filename="{name}"'
    response["X-Content-Type-Options"] = "nosniff"
    # A customer's file is theirs: not cached by a shared cache, and never run as a page.
    response["Cache-Control"] = "private, no-store"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response
