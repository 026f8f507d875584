from __future__ import annotations

from django.urls import path

from copilot import panel_views, views

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
    # The panel's side pieces (copilot/panel_views.py): context, actions under an answer.
    path("<int:conversation_id>/context/", panel_views.chat_context, name="chat_context"),
    path(
        "<int:conversation_id>/answers/<int:message_id>/actions/",
        panel_views.answer_actions,
        name="chat_answer_actions",
    ),
    path(
        "<int:conversation_id>/answers/<int:message_id>/undo/",
        panel_views.answer_undo,
        name="chat_answer_undo",
    ),
    path("approvals/<int:action_id>/", panel_views.approval_card, name="chat_approval_card"),
    path(
        "approvals/<int:action_id>/decide/",
        panel_views.approval_decide,
        name="chat_approval_decide",
    ),
]
