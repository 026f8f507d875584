from __future__ import annotations

from django.urls import path

from evaluation import abtests_views, metrics_views

urlpatterns = [
    path("agents/", metrics_views.agent_metrics_view, name="agent_metrics"),
    path("abtests/", abtests_views.abtest_list, name="abtests"),
    path("abtests/<int:test_id>/", abtests_views.abtest_detail, name="abtest_detail"),
    path("abtests/<int:test_id>/stop/", abtests_views.abtest_stop_view, name="abtest_stop"),
    path(
        "abtests/<int:test_id>/promote/", abtests_views.abtest_promote_view, name="abtest_promote"
    ),
    path(
        "abtests/<int:test_id>/offline/", abtests_views.abtest_offline_view, name="abtest_offline"
    ),
]
