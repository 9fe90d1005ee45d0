"""Suite pages about uploads, under /suites/<suite>/."""

from django.urls import path

from . import trends_views, views

urlpatterns = [
    path("", views.overview, name="overview"),
    path("reports/", views.reports, name="reports"),
    path("reports/<int:pk>/", views.report_detail, name="report"),
    path("verdicts/", views.batches, name="verdicts"),
    path("verdicts/<int:pk>/", views.batch_detail, name="batch"),
    path("nodes/<path:nodeid>/", views.node_detail, name="node"),
    path("trends/", trends_views.trends, name="trends"),
    path("trends/<slug:chart>.csv", trends_views.trends_csv, name="trends_csv"),
]
