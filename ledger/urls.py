"""Suite pages about the ledger, under /suites/<suite>/."""

urlpatterns = []
