"""System checks of the runs app (``manage.py check``, ``runserver``'s start)."""

from __future__ import annotations

from django.core import checks

from .api.download import stale_file


@checks.register()
def client_file_current(app_configs, **kwargs):
    """A built client file older than client/src is never served; say so at start-up."""
    why = stale_file()
    return [checks.Warning(why, id="runs.W001")] if why else []
