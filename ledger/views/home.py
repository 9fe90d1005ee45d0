"""The suite list and the health check."""

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from ledger.access import suites_for


@login_required
def home(request):
    suites = list(suites_for(request.user))
    if len(suites) == 1:
        return redirect("overview", suite=suites[0].slug)
    return render(request, "ledger/home.html", {"suites": suites})


@require_GET
@never_cache
def healthz(request):
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:  # any database failure means unhealthy
        return JsonResponse({"database": "unavailable"}, status=503)
    return JsonResponse({"database": "ok"})
