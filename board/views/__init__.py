"""The pages that compose several apps: ``overview``, ``nodes`` (a node's page), ``connect``
(Connect CI) and ``flaky`` (the flaky-tests page)."""
