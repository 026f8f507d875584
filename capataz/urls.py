from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from copilot import channels
from copilot import views as copilot_views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    # Try an utterance (D1) sits with the agents, but runs the chat's engine (a floor above them).
    path("agents/try/", copilot_views.try_view, name="try_utterance"),
    path("agents/", include("agents.urls")),
    path("chat/", include("copilot.chat_urls")),
    path("approvals/", include("approvals.urls")),
    # Per-agent metrics (D2) and A/B tests (V4): evaluation/metrics_urls.py.
    path("metrics/", include("evaluation.metrics_urls")),
    # Each channel app's own pages and webhooks (copilot/channels.py), at /<channel>/.
    *(path(f"{c.name}/", include(c.urls)) for c in channels.registered() if c.urls),
    path("suggestions/", include("copilot.suggestion_urls")),
    path("evaluation/", include("evaluation.urls")),
    path("", include("business.urls")),
]
