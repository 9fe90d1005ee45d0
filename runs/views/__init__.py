"""The pages built on uploads, one module per page group: ``overview``, ``uploads`` (the
reports and verdict batches, their lists and each one), ``nodes`` (a node's history) and
``trends``."""
