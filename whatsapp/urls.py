from __future__ import annotations

from django.urls import path

from whatsapp import media_views, views, webhook

app_name = "whatsapp"
urlpatterns = [
    path("webhook/", webhook.webhook, name="webhook"),
    path("media/<int:media_id>/", media_views.media_file, name="media"),
    # Human mode (whatsapp/humans.py): a member takes the conversation, answers, hands it back.
    path("conversations/<int:conversation_id>/take/", views.take_over, name="take"),
    path("conversations/<int:conversation_id>/release/", views.hand_back, name="release"),
    path("conversations/<int:conversation_id>/reply/", views.reply, name="reply"),
]
