"""The CI client, served by the board itself so a CI job needs only curl to fetch it.

What is served is the assembly of client/src (client/build.py), made once per process and
stamped with its build, a hash of its sources: never a file on disk that an edit under
client/src has left behind. The build is the file's ETag (a 304 for a copy that is
current), and every API answer names it (``Flakeboard-Client-Served``); a client that sends
another build (its ``Flakeboard-Client`` header) is told so in ``Flakeboard-Client-Notice``,
which the client prints. The file's date (``Last-Modified``) is its newest source's, for
a copy revalidated by date (``curl -z``); the ETag decides when both are sent.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache

from django.conf import settings
from django.http import HttpResponse
from django.urls import reverse
from django.views.decorators.http import condition, require_GET

CLIENT_NAME = "flakeboard_ci.py"
CLIENT_PATH = settings.BASE_DIR / "client" / CLIENT_NAME
BUILD_PATH = settings.BASE_DIR / "client" / "build.py"
CLIENT_HEADER = "Flakeboard-Client"
SERVED_HEADER = "Flakeboard-Client-Served"
NOTICE_HEADER = "Flakeboard-Client-Notice"


@dataclass(frozen=True)
class ServedClient:
    body: bytes
    build: str
    modified: datetime  # the newest of its sources' modification times, in whole seconds


@cache
def _builder():
    spec = importlib.util.spec_from_file_location("flakeboard_client_build", BUILD_PATH)
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return build


@cache
def served_client() -> ServedClient:
    """The client assembled from client/src and its build; made once per process (the WSGI
    application makes it at start-up)."""
    builder = _builder()
    text = builder.assemble()
    newest = int(max(path.stat().st_mtime for path in builder.sources()))
    return ServedClient(text.encode("utf-8"), builder.build_of(text),
                        datetime.fromtimestamp(newest, tz=UTC))


def stale_file() -> str | None:
    """Why client/flakeboard_ci.py on disk is not what the board serves (None: it is, or
    there is none). ``measure``'s workers and a local run use that file: `make client`
    rebuilds it."""
    if not CLIENT_PATH.exists():
        return None
    built = _builder().build_of(CLIENT_PATH.read_text(encoding="utf-8", errors="replace"))
    served = served_client().build
    if built == served:
        return None
    return (f"client/{CLIENT_NAME} is build {built or 'unknown'}, not client/src's build "
            f"{served}: the board serves client/src's, and never the file; run `make client` "
            f"to rebuild it")


@require_GET
@condition(etag_func=lambda request: served_client().build,
           last_modified_func=lambda request: served_client().modified)
def ci_client(request):
    served = served_client()
    response = HttpResponse(served.body, content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{CLIENT_NAME}"'
    # Revalidated on every fetch (a 304 while the build is the same): a proxy or CI cache
    # never hands out a client older than the board's.
    response["Cache-Control"] = "no-cache"
    return response


def client_notice(sent: str, served: str, address: str) -> str:
    """What the board says to a client of build ``sent``, another than ``served``."""
    return (f"this client is build {sent}; the board serves build {served}: fetch it again "
            f"from {address}")


class ClientBuildHeaders:
    """Every API answer names the served client's build, and tells a client of another
    build so (client_notice)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not request.path.startswith("/api/"):
            return response
        served = served_client().build
        response[SERVED_HEADER] = served
        sent = request.headers.get(CLIENT_HEADER, "")
        if sent and sent != served:
            address = request.build_absolute_uri(reverse("ci_client"))
            response[NOTICE_HEADER] = client_notice(sent, served, address)
        return response
