from django.urls import path

from . import views

urlpatterns = [
    path("settings/webhook/", views.webhook, name="settings_webhook"),
    path("settings/webhook/save/", views.webhook_save, name="settings_webhook_save"),
    path("settings/webhook/remove/", views.webhook_delete, name="settings_webhook_remove"),
    path("settings/webhook/test/", views.webhook_test, name="settings_webhook_test"),
]
