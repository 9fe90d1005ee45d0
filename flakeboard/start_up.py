"""Starting the board: the settings are read first, so that one that cannot work stops it
with its own sentence (an ImproperlyConfigured from ``flakeboard/settings.py``) in one line,
not under a traceback that hides it. ``manage.py`` and the server (``flakeboard/gunicorn.py``)
both start here."""

from __future__ import annotations

import sys

from django.core.exceptions import ImproperlyConfigured


def settings_or_exit() -> None:
    """Read the settings; on a setting that cannot work, exit saying why in one line."""
    from django.conf import settings

    try:
        settings.INSTALLED_APPS  # the first setting read imports and checks them all  # noqa: B018
    except ImproperlyConfigured as exc:
        sys.exit(f"Flakeboard cannot start: {exc}")
