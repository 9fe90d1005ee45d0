from django.apps import AppConfig


class TrackersConfig(AppConfig):
    name = "trackers"
    verbose_name = "Issue trackers"
