"""Reading the settings' environment variables: each is optional, an empty value is unset."""

import os


def env(name, default=None):
    return os.environ.get(name, default)


def envbool(name, default):
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def envint(name, default):
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


def envfloat(name, default):
    value = os.environ.get(name)
    return float(value) if value not in (None, "") else default
