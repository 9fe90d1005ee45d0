"""The JSON API CI calls, under /api/v1/ (SPEC 5); its OpenAPI document and docs beside it."""

from board.api.diagnoses import router as diagnoses_router
from board.api.failures import router as failures_router
from board.api.targets import router as targets_router
from junit.api.order import router as junit_order_router
from junit.api.uploads import router as junit_router
from ledger.api.auth import SuiteToken
from ledger.api.codeowners import router as codeowners_router
from ledger.api.events import router as events_router
from ledger.api.ledger import router as ledger_router
from ledger.api.status import router as status_router
from ledger.api.tiers import router as tiers_router
from runs.api import history  # noqa: F401 - the read GETs, on the uploads' router
from runs.api.impact import router as impact_router
from runs.api.trends import router as trends_router
from runs.api.uploads import router as uploads_router
from web.api.errors import install_error_handlers
from web.api.openapi import DocumentedAPI

api = DocumentedAPI(
    title="Flakeboard API",
    version="1",
    description=(
        "The gate endpoints CI calls on every patch. Authenticate with "
        "`Authorization: Bearer <token>`: a token belongs to one suite and reads, or reads "
        "and writes. Every error answers `{\"error\": code, \"message\": text, "
        "\"details\": [{\"row\", \"field\", \"code\", \"message\"}]}`."
    ),
    urls_namespace="api",
    auth=SuiteToken(),
)
install_error_handlers(api)
for router in (ledger_router, status_router, uploads_router, trends_router, junit_router,
               junit_order_router, targets_router, failures_router, diagnoses_router,
               tiers_router, impact_router, codeowners_router, events_router):
    api.add_router("", router)
