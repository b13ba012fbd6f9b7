"""Admin function (AdminFunction): the hot-memory editor and its kill switch, revisions, the
review queue, the evidence of lines and candidates, the audit trail, weekly report corrections and
revisions, the team console (``static/console/``), who the caller is, and the projects and their
members; the routes are ``agent_memory.http.routes.admin``.

Why a function of its own: it is the only HTTP path that WRITES the MemoryTable, so it alone gets
write permissions there (no sessions or flow-log tables, no secret, no LLM).
"""

import gc

gc.disable()  # no cyclic GC pass while the modules load (docs/architecture.md, "Cold start")

from pathlib import Path
from typing import Any

from agent_memory.http.handler import API_GATEWAY_HTTP, LambdaContext, logger, metrics
from agent_memory.http.routes.admin import admin_app
from agent_memory.wiring import build_admin_function

app = admin_app(build_admin_function(), console_folder=Path(__file__).resolve().parent / "static" / "console")


@logger.inject_lambda_context(correlation_id_path=API_GATEWAY_HTTP, log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (API Gateway HTTP API, payload format 2.0)."""
    return app.resolve(event, context)


gc.freeze()  # what the modules built lives as long as the function: later collections skip it
gc.enable()
