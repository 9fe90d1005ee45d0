"""Suite pages about uploads, under /suites/<suite>/."""

from django.urls import path

from . import views

urlpatterns = [
    path("", views.overview, name="overview"),
    path("reports/<int:pk>/", views.report_detail, name="report"),
    path("verdicts/<int:pk>/", views.batch_detail, name="batch"),
]
