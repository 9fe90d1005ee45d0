"""The CI client, served by the board itself so a CI job needs only curl to fetch it."""

from __future__ import annotations

import importlib.util
from functools import cache

from django.conf import settings
from django.http import FileResponse, HttpResponse
from django.views.decorators.http import require_GET

CLIENT_NAME = "flakeboard_ci.py"
CLIENT_PATH = settings.BASE_DIR / "client" / CLIENT_NAME
BUILD_PATH = settings.BASE_DIR / "client" / "build.py"


@cache
def assembled_client() -> bytes:
    """The client assembled from client/src in memory, for a checkout where `make install`
    (`make client`) has not written it yet; built once per process."""
    spec = importlib.util.spec_from_file_location("flakeboard_client_build", BUILD_PATH)
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return build.assemble().encode("utf-8")


@require_GET
def ci_client(request):
    content_type = "text/x-python; charset=utf-8"
    if CLIENT_PATH.exists():
        response = FileResponse(CLIENT_PATH.open("rb"), as_attachment=True,
                                filename=CLIENT_NAME, content_type=content_type)
    else:
        response = HttpResponse(assembled_client(), content_type=content_type)
        response["Content-Disposition"] = f'attachment; filename="{CLIENT_NAME}"'

    response["Cache-Control"] = "public, max-age=300"
    return response
