from __future__ import annotations

from django.urls import path

from copilot.consumers import ChatConsumer
from copilot.whatsapp_consumers import WhatsAppConsumer

websocket_urlpatterns = [
    path("ws/chat/<int:conversation_id>/", ChatConsumer.as_asgi()),
    path("ws/whatsapp/", WhatsAppConsumer.as_asgi()),
]
