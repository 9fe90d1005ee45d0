"""Connect CI: everything a team needs to wire its CI to this suite on one page — the
board's own address filled into the recipe, a write token for leads to create, the API
docs and the client, and the last upload seen from CI as proof that it works."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from junit.models import JUnitFile
from ledger.access import can, suite_for
from ledger.models import ApiToken, Role, TrustPolicy
from runs.models import Report, VerdictBatch


def last_uploads(suite) -> list:
    """The newest upload of each kind (report, verdict batch, JUnit file), newest first."""
    found = [(kind, model.objects.filter(suite=suite).order_by("-created_at", "-pk").first())
             for kind, model in (("report", Report), ("batch", VerdictBatch),
                                 ("junit", JUnitFile))]
    return sorted(((kind, upload) for kind, upload in found if upload is not None),
                  key=lambda pair: pair[1].created_at, reverse=True)


@login_required
@require_GET
def connect(request, suite):
    suite = suite_for(request, suite)
    base = request.build_absolute_uri("/").rstrip("/")
    return render(request, "board/connect.html", {
        "suite": suite,
        "nav": "connect",
        "base_url": base,
        # A CI's id token is checked against BASE_URL: its audience, whatever the request's host.
        "audience": settings.BASE_URL,
        "trust_policies": TrustPolicy.objects.filter(suite=suite).count(),
        "client_url": request.build_absolute_uri(reverse("ci_client")),
        "docs_url": request.build_absolute_uri("/api/v1/docs"),
        "openapi_url": request.build_absolute_uri("/api/v1/openapi.json"),
        "uploads": last_uploads(suite),
        "write_tokens": ApiToken.objects.filter(suite=suite, scope=ApiToken.Scope.WRITE,
                                                revoked_at=None).count(),
        "is_lead": can(request.role, Role.LEAD),
    })
