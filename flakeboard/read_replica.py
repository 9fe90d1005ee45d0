"""READ_DATABASE_URL: a PostgreSQL streaming replica of DATABASE_URL that answers the pages'
and the read API's GETs (docs/deployment.md#a-read-replica). The settings add it as the
database alias ``replica``, with the router that reads it (``web/replica.py``, which falls
back to the primary while the replica is down) and the middleware that decides, for each
request, whether it may (``web/read_routing.py``). In tests the replica mirrors the
primary, so the tests read one database as before.
"""

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from flakeboard.environment import envint

CONNECT_TIMEOUT = 3  # seconds: a replica that does not answer costs a request no more


def replica_database(url: str, primary: dict) -> dict:
    """The replica's database settings: kept connections as the primary's, each checked
    at a request's first read (Django's health check)."""
    replica = dj_database_url.parse(
        url, conn_max_age=primary["CONN_MAX_AGE"], conn_health_checks=True,
        disable_server_side_cursors=primary.get("DISABLE_SERVER_SIDE_CURSORS", False),
    )
    if {primary["ENGINE"], replica["ENGINE"]} != {"django.db.backends.postgresql"}:
        raise ImproperlyConfigured(
            "READ_DATABASE_URL names a PostgreSQL replica of a PostgreSQL DATABASE_URL."
        )
    replica["OPTIONS"] = {"connect_timeout": CONNECT_TIMEOUT}
    replica["TEST"] = {"MIRROR": "default"}
    return replica


def read_after_write_seconds() -> int:
    """How long a client that wrote reads the primary (READ_AFTER_WRITE_SECONDS)."""
    seconds = envint("READ_AFTER_WRITE_SECONDS", 10)
    if seconds < 1:
        raise ImproperlyConfigured("READ_AFTER_WRITE_SECONDS is a count of seconds: 1 or more.")
    return seconds
