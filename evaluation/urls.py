from __future__ import annotations

from django.urls import path

from evaluation import views

app_name = "evaluation"

urlpatterns = [
    path("", views.index, name="index"),
    path("datasets/new/", views.dataset_new, name="dataset_new"),
    path("datasets/<int:pk>/", views.dataset_detail, name="dataset"),
    path("datasets/<int:pk>/import/", views.dataset_import_view, name="dataset_import"),
    path("datasets/<int:pk>/export/", views.dataset_export_view, name="dataset_export"),
    path("datasets/<int:pk>/cases/new/", views.case_new, name="case_new"),
    path("cases/<int:pk>/", views.case_edit, name="case"),
    path("cases/<int:pk>/delete/", views.case_delete, name="case_delete"),
    path("runs/new/", views.run_new, name="run_new"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("runs/<int:pk>/progress/", views.run_progress, name="run_progress"),
    path("runs/<int:pk>/calibration/", views.run_calibration, name="calibration"),
    path("runs/<int:pk>/calibration/apply/", views.run_calibration_apply, name="calibration_apply"),
    path("compare/", views.run_compare_view, name="compare"),
    path("feedback/", views.feedback_queue, name="feedback"),
    path("feedback/<int:pk>/case/", views.feedback_case, name="feedback_case"),
    path("feedback/<int:pk>/dismiss/", views.feedback_dismiss_view, name="feedback_dismiss"),
    path("messages/<int:pk>/case/", views.message_case, name="message_case"),
    path("answers/<int:message_id>/feedback/", views.answer_feedback, name="answer_feedback"),
]
