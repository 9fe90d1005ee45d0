"""Reading the settings' environment variables: each is optional, an empty value is unset.

A value that cannot work is refused with ImproperlyConfigured, naming the variable: the
board then stops at start-up with that one line (``flakeboard/start_up.py``).
"""

import os

from django.core.exceptions import ImproperlyConfigured


def env(name, default=None):
    return os.environ.get(name, default)


def envbool(name, default):
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_number(name, default, read, kind):
    value = os.environ.get(name)
    if value in (None, ""):
        return default
    try:
        return read(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} is “{value}”: it must be {kind}.") from None


def envint(name, default):
    return _env_number(name, default, int, "a whole number")


def envfloat(name, default):
    return _env_number(name, default, float, "a number")


def env_policy(defaults: dict, bounds: dict) -> dict:
    """New suites' policy numbers: each of ``defaults`` from its variable, ``DEFAULT_`` and
    its name in capitals (read as the default's type), and refused outside the range
    ``bounds`` gives it, the same range a suite's own number may take."""
    numbers = {}
    for name, default in defaults.items():
        variable = f"DEFAULT_{name.upper()}"
        read = envint if isinstance(default, int) else envfloat
        value = read(variable, default)
        if value not in bounds[name]:
            low, high = bounds[name]
            raise ImproperlyConfigured(f"{variable} is {value}: it must be from {low} to {high}.")
        numbers[name] = value
    return numbers
