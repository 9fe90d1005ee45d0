"""The ledger GET, answered before the API router.

CI asks for the ledger before every gate, and most answers are a 304 or cached bytes. The
API's router, parameter parsing and auth hooks cost several times what such an answer
does, so this middleware answers a clean hit itself, with the same two functions as the
API view: ``token_authenticate`` (through the API's own bearer scheme) and
``ledger_answer`` (which calls ``ledger_etag``). It sits after the middlewares that add
headers and check the host (security, common, clickjacking, CSP), so both paths answer
with the same headers.

Anything that is not a clean hit goes on to the API unchanged: another method or query,
no token or a refused one (the API's 401 and 403 have their own shape and headers).
"""

from __future__ import annotations

import re
from functools import cache

from django.urls import get_script_prefix, reverse

from ledger.api.auth import Scope, SuiteToken, refusal
from web.api.errors import ApiError

from .ledger import ledger_answer

# The query strings the API accepts for the ledger (``view`` is compact by default).
VIEWS = {"": False, "view=compact": False, "view=full": True}
BEARER = SuiteToken()


@cache
def ledger_path() -> re.Pattern:
    """The ledger's route, as the URLconf writes it, with the suite slug as a group."""
    stand_in = "SUITE"
    path = reverse("api:ledger", kwargs={"suite": stand_in})
    path = "/" + path.removeprefix(get_script_prefix())
    before, after = path.split(stand_in)
    return re.compile(re.escape(before) + "(?P<suite>[^/]+)" + re.escape(after))


class LedgerFastPath:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method == "GET":
            answer = self.answer(request)
            if answer is not None:
                return answer
        return self.get_response(request)

    @staticmethod
    def answer(request):
        match = ledger_path().fullmatch(request.path_info)
        full = VIEWS.get(request.META.get("QUERY_STRING", ""))
        if match is None or full is None:
            return None
        try:
            token = BEARER(request)
        except ApiError:  # an expired token: the API answers its 401
            return None
        if token is None or refusal(token, match["suite"], Scope.READ) is not None:
            return None
        request.auth = token
        return ledger_answer(request, token.suite, full=full)
