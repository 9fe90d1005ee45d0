"""The ledger's forms, one module per page group: ``entries`` (the ledger page's filters,
creating, renewing and clearing an entry) and ``settings`` (the settings page)."""
