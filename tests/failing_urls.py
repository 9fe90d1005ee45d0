"""A URL configuration with one view that raises, for the 500 page's test."""

from django.urls import path

from flakeboard.urls import handler500, urlpatterns  # noqa: F401 - the handler is looked up here


def boom(request):
    raise RuntimeError("boom")


urlpatterns = [*urlpatterns, path("boom/", boom)]
