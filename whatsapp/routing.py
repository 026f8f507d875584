from __future__ import annotations

from django.urls import path

from whatsapp.consumers import WhatsAppConsumer

websocket_urlpatterns = [path("ws/whatsapp/", WhatsAppConsumer.as_asgi())]
