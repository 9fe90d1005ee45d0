"""The error pages (400, 403, 404, 500) in the board's own layout, and their JSON shape
under /api/, where a client reads errors as JSON. They show what to do next: a 403 names
the role needed, a 404 under /suites/ lists the suites the user can open.

Django shows its own debug pages instead while DEBUG is on."""

from __future__ import annotations

from django.http import HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from ledger.access import suites_for

API_PREFIX = "/api/"


def _answer(request, status: int, code: str, title: str, message: str, **extra):
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"error": code, "message": message, "details": []}, status=status)
    context = {"status": status, "title": title, "message": message, **extra}
    return render(request, "error.html", context, status=status)


def bad_request(request, exception=None):
    return _answer(request, 400, "bad_request", "Bad request",
                   "The board could not read this request.")


def permission_denied(request, exception=None):
    reason = str(exception) if exception and str(exception) else ""
    # A 403 under /suites/<slug>/ comes to a member (an outsider gets 404): back to its pages.
    parts = request.path.split("/")
    back = f"/suites/{parts[2]}/" if len(parts) > 3 and parts[1] == "suites" else None
    return _answer(request, 403, "forbidden", "Not allowed",
                   reason or "Your role does not allow this.",
                   hint="A lead of the suite can change your role on its Settings page.",
                   back=back)


def page_not_found(request, exception=None):
    suites = None
    if request.path.startswith("/suites/") and request.user.is_authenticated:
        suites = list(suites_for(request.user).order_by("slug"))
    return _answer(request, 404, "not_found", "Not found",
                   "There is nothing at this address, or it is not yours to see.",
                   suites=suites)


def server_error(request):
    """A page that needs neither the database nor the request's user: either may be what
    failed."""
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"error": "server_error", "message": "The board failed to answer: "
                             "try again, and tell its administrators if it persists.",
                             "details": []}, status=500)
    body = render_to_string("error.html", {
        "status": 500, "title": "Server error",
        "message": "The board failed to answer this request. Try again; if it persists, "
                   "tell the board's administrators (the error is in its log)."})
    return HttpResponseServerError(body)
