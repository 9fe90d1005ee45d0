"""Suite pages about uploads, under /suites/<suite>/."""

from django.urls import path

from .views import nodes, overview, trends, uploads

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("reports/", uploads.reports, name="reports"),
    path("reports/<int:pk>/", uploads.report_detail, name="report"),
    path("verdicts/", uploads.batches, name="verdicts"),
    path("verdicts/<int:pk>/", uploads.batch_detail, name="batch"),
    path("nodes/<path:nodeid>/", nodes.node_detail, name="node"),
    path("trends/", trends.trends, name="trends"),
    path("trends/<slug:chart>.csv", trends.trends_csv, name="trends_csv"),
]
