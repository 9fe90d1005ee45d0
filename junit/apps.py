from django.apps import AppConfig


class JunitConfig(AppConfig):
    name = "junit"
    verbose_name = "JUnit evidence"
