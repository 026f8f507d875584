from __future__ import annotations

from django.urls import path

from copilot import media_views, webhook

app_name = "whatsapp"
urlpatterns = [
    path("webhook/", webhook.webhook, name="webhook"),
    path("media/<int:media_id>/", media_views.media_file, name="media"),
]
