"""Governance function (GovernanceFunction): erasure of a patient or a session, the project export
(project admins), the removal of a whole project (platform operators); the routes are
``agent_memory.http.routes.governance``.

Why a function of its own: it is the only HTTP path that DELETES from the sessions table, the flow
log and the idempotency table, and the only one that may read the flow log (docs/architecture.md,
"Data governance").
"""

import gc

gc.disable()  # no cyclic GC pass while the modules load (docs/architecture.md, "Cold start")

from typing import Any

from agent_memory.http.handler import API_GATEWAY_HTTP, LambdaContext, logger, metrics
from agent_memory.http.routes.governance import governance_app
from agent_memory.wiring import build_governance_function

app = governance_app(build_governance_function())


@logger.inject_lambda_context(correlation_id_path=API_GATEWAY_HTTP, log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (API Gateway HTTP API, payload format 2.0)."""
    return app.resolve(event, context)


gc.freeze()  # what the modules built lives as long as the function: later collections skip it
gc.enable()
