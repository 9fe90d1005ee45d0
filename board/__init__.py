"""The pages and answers that show more than one app's data (the overview, a node's page,
Connect CI, the flaky-tests page, the targets file, the demo and the metrics scrape): the
one place above ``runs``, ``junit`` and ``notify`` that composes them."""
