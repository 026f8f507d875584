from __future__ import annotations

from django.urls import path

from approvals import views

urlpatterns = [
    path("", views.queue, name="approvals"),
    path("<int:action_id>/", views.detail, name="approval_detail"),
    path("<int:action_id>/decide/", views.decide, name="approval_decide"),
]
