"""Suite pages about uploads, under /suites/<suite>/."""

from django.urls import path, register_converter

from ledger.models import KEY_LENGTH

from .views import connect, nodes, overview, trends, uploads


class NodeKeyConverter:
    """A node's key (ledger.models.text_key): the node page's address."""

    regex = f"[0-9a-f]{{{KEY_LENGTH}}}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(NodeKeyConverter, "nodekey")

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("reports/", uploads.reports, name="reports"),
    path("reports/<int:pk>/", uploads.report_detail, name="report"),
    path("verdicts/", uploads.batches, name="verdicts"),
    path("verdicts/<int:pk>/", uploads.batch_detail, name="batch"),
    path("nodes/<nodekey:key>/", nodes.node_detail, name="node"),
    # The earlier address, by node id: redirected to the key's page where it resolves.
    path("nodes/<path:nodeid>/", nodes.node_by_id, name="node_by_id"),
    path("trends/", trends.trends, name="trends"),
    path("connect/", connect.connect, name="connect"),
    path("trends/<slug:chart>.csv", trends.trends_csv, name="trends_csv"),
]
