"""The ledger's pages, one module per page group: ``home`` (the suite list and the health
check), ``ledger``, ``entries`` (one entry, creating, renewing, clearing) and ``settings``."""
