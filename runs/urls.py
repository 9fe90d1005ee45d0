"""Suite pages about uploads, under /suites/<suite>/."""

import re
from urllib.parse import unquote

from django.urls import path, register_converter

from flakeboard import rules

from .views import patches, uploads

DOT_SEGMENT = re.compile(r"(?<![^/])\.+(?![^/])")


class PatchConverter:
    """A patch name, any text an upload may name (``rules.label_problem``), kept readable:
    ``/``, spaces and the like as Django quotes them, but ``%`` and every segment of dots
    escaped first (so that ``a/../b`` is not ``b``). ``reverse`` then quotes the escapes
    once more, and the server's decoding takes that off again: every name round-trips."""

    regex = ".+"

    def to_python(self, value: str) -> str:
        patch = unquote(value)
        if rules.label_problem(patch, rules.META_MAX_LENGTH):
            raise ValueError("not a patch name")  # a 404: no stored patch holds one
        return patch

    def to_url(self, value: str) -> str:
        escaped = value.replace("%", "%25")
        return DOT_SEGMENT.sub(lambda dots: "%2E" * len(dots.group()), escaped)


register_converter(PatchConverter, "patch")

urlpatterns = [
    path("reports/", uploads.reports, name="reports"),
    path("reports/<int:pk>/", uploads.report_detail, name="report"),
    path("verdicts/", uploads.batches, name="verdicts"),
    path("verdicts/<int:pk>/", uploads.batch_detail, name="batch"),
    path("patches/<patch:patch>/", patches.patch_detail, name="patch"),
]
