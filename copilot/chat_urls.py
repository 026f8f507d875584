from __future__ import annotations

from django.urls import path

from copilot import views

urlpatterns = [
    path("", views.chat_index, name="chat"),
    path("new/", views.chat_new, name="chat_new"),
    path("<int:conversation_id>/", views.chat_detail, name="chat_detail"),
    path(
        "<int:conversation_id>/turns/<str:turn_id>/answer/", views.chat_answer, name="chat_answer"
    ),
    path("traces/", views.trace_index, name="trace_index"),
    path("traces/<int:conversation_id>/", views.trace_conversation, name="trace_conversation"),
    path("traces/turn/<str:turn_id>/", views.trace_turn, name="trace_turn"),
]
