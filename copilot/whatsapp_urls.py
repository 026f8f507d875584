from __future__ import annotations

from django.urls import path

from copilot import webhook

app_name = "whatsapp"
urlpatterns = [path("webhook/", webhook.webhook, name="webhook")]
