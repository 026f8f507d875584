from __future__ import annotations

from django.urls import path

from copilot import views, whatsapp_views

urlpatterns = [
    path("", views.chat_index, name="chat"),
    path("new/", views.chat_new, name="chat_new"),
    path("<int:conversation_id>/", views.chat_detail, name="chat_detail"),
    path("<int:conversation_id>/whatsapp/take/", whatsapp_views.take_over, name="whatsapp_take"),
    path(
        "<int:conversation_id>/whatsapp/release/", whatsapp_views.hand_back, name="whatsapp_release"
    ),  # fmt: skip
    path("<int:conversation_id>/whatsapp/reply/", whatsapp_views.reply, name="whatsapp_reply"),
    path("traces/", views.trace_index, name="trace_index"),
    path("traces/<int:conversation_id>/", views.trace_conversation, name="trace_conversation"),
    path("traces/turn/<str:turn_id>/", views.trace_turn, name="trace_turn"),
]
