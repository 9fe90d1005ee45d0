"""The CI client, served by the board itself so a CI job needs only curl to fetch it."""

from __future__ import annotations

from django.conf import settings
from django.http import FileResponse
from django.views.decorators.http import require_GET

CLIENT_NAME = "flakeboard_ci.py"
CLIENT_PATH = settings.BASE_DIR / "client" / CLIENT_NAME


@require_GET
def ci_client(request):
    response = FileResponse(
        CLIENT_PATH.open("rb"),
        as_attachment=True,
        filename=CLIENT_NAME,
        content_type="text/x-python; charset=utf-8",
    )
    response["Cache-Control"] = "public, max-age=300"
    return response
