"""Suite pages about passive evidence, under /suites/<suite>/."""

from django.urls import path

from . import views

urlpatterns = [
    path("flaky/", views.flaky, name="flaky"),
    path("flaky/measure/", views.measure, name="flaky_measure"),
]
