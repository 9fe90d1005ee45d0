"""The pages built on uploads, one module per page group: ``uploads`` (the reports and
verdict batches, their lists and each one), ``patches`` (a patch's attempts) and ``trends``.
The pages that also show JUnit's evidence (the overview, a node's page, Connect CI, the
flaky-tests page) are ``board.views``."""
