from django.urls import path

from . import views

urlpatterns = [
    path("settings/tracker/", views.tracker, name="settings_tracker"),
    path("settings/tracker/save/", views.tracker_save, name="settings_tracker_save"),
    path("settings/tracker/remove/", views.tracker_delete, name="settings_tracker_remove"),
    path("settings/tracker/test/", views.tracker_check, name="settings_tracker_test"),
]
