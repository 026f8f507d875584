from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    path("agents/", include("agents.urls")),
    path("chat/", include("copilot.chat_urls")),
    path("approvals/", include("approvals.urls")),
    path("whatsapp/", include("copilot.whatsapp_urls")),
    path("suggestions/", include("copilot.suggestion_urls")),
    path("", include("business.urls")),
]
