"""Suite pages that show more than one app's data, under /suites/<suite>/: the overview,
a node's page, Connect CI, the flaky-tests page and the trends."""

from django.urls import path, register_converter

from ledger.models import KEY_LENGTH

from .views import connect, flaky, nodes, overview, trends


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
    path("nodes/<nodekey:key>/", nodes.node_detail, name="node"),
    # The earlier address, by node id: redirected to the key's page where it resolves.
    path("nodes/<path:nodeid>/", nodes.node_by_id, name="node_by_id"),
    path("connect/", connect.connect, name="connect"),
    # JUnit's flaky tests and the gate's flips together (board.flaky).
    path("flaky/", flaky.flaky, name="flaky"),
    path("flaky/measure/", flaky.measure, name="flaky_measure"),
    # The reason codes over time (runs.views.trends) with the flaky tests by category.
    path("trends/", trends.trends, name="trends"),
    path("trends/<slug:chart>.csv", trends.trends_csv, name="trends_csv"),
]
