"""Suite pages about uploads, under /suites/<suite>/."""

import re
from urllib.parse import unquote

from django.urls import path, register_converter

from flakeboard import rules
from ledger.models import KEY_LENGTH

from .views import connect, flaky, nodes, overview, patches, trends, uploads


class NodeKeyConverter:
    """A node's key (ledger.models.text_key): the node page's address."""

    regex = f"[0-9a-f]{{{KEY_LENGTH}}}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


# A path segment of dots only: a browser resolves "." and ".." before it sends a URL.
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


register_converter(NodeKeyConverter, "nodekey")
register_converter(PatchConverter, "patch")

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("reports/", uploads.reports, name="reports"),
    path("reports/<int:pk>/", uploads.report_detail, name="report"),
    path("verdicts/", uploads.batches, name="verdicts"),
    path("verdicts/<int:pk>/", uploads.batch_detail, name="batch"),
    path("patches/<patch:patch>/", patches.patch_detail, name="patch"),
    path("nodes/<nodekey:key>/", nodes.node_detail, name="node"),
    # The earlier address, by node id: redirected to the key's page where it resolves.
    path("nodes/<path:nodeid>/", nodes.node_by_id, name="node_by_id"),
    path("trends/", trends.trends, name="trends"),
    path("connect/", connect.connect, name="connect"),
    path("trends/<slug:chart>.csv", trends.trends_csv, name="trends_csv"),
    # JUnit's flaky tests and the gate's flips together (runs.flaky).
    path("flaky/", flaky.flaky, name="flaky"),
    path("flaky/measure/", flaky.measure, name="flaky_measure"),
]
