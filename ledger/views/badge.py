"""The suite's status badge (SVG), for a README or a wall screen.

Public when the suite allows it; otherwise only its members see it, and anyone else gets
404, as for every page of a suite they cannot see.
"""

from django.http import Http404
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from ledger.access import role_in

from ..badge import status_badge
from ..models import Suite
from ..selectors import gate_status_now

# A public badge is fetched through image proxies (GitHub's among them): let them keep it
# a minute. A private one is the member's own.
PUBLIC_CACHE = "public, max-age=60"
PRIVATE_CACHE = "private, no-cache"


@require_GET
def badge(request, suite):
    suite = Suite.objects.filter(slug=suite).first()
    if suite is None or not (suite.public_badge or role_in(suite, request.user)):
        raise Http404("No such suite.")
    drawn = status_badge(gate_status_now(suite, timezone.now().date()))
    response = render(request, "ledger/badge.svg", {"badge": drawn},
                      content_type="image/svg+xml; charset=utf-8")
    response["Cache-Control"] = PUBLIC_CACHE if suite.public_badge else PRIVATE_CACHE
    return response
