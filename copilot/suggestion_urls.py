from __future__ import annotations

from django.urls import path

from copilot import views

urlpatterns = [
    path("", views.suggestions, name="suggestions"),
    path("<int:pk>/accept/", views.suggestion_accept, name="suggestion_accept"),
    path("<int:pk>/dismiss/", views.suggestion_dismiss, name="suggestion_dismiss"),
]
