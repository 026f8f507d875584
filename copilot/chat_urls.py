from __future__ import annotations

from django.urls import path

from copilot import views

urlpatterns = [
    path("", views.chat_index, name="chat"),
    path("new/", views.chat_new, name="chat_new"),
    path("<int:conversation_id>/", views.chat_detail, name="chat_detail"),
]
