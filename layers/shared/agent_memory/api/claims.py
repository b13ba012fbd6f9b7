"""Who is calling: the JWT claims API Gateway's authorizer verified."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2


def user_id_from_event(event: APIGatewayProxyEventV2) -> str:
    """The caller's user id (``sub`` claim); ``anonymous`` when there are no claims."""
    claims: dict[str, Any] = {}
    try:
        authorizer = event.request_context.authorizer
        if authorizer is not None and authorizer.jwt_claim:
            claims = dict(authorizer.jwt_claim)
    except (AttributeError, KeyError, TypeError):
        claims = {}
    sub = claims.get("sub") or claims.get("username")
    return str(sub) if sub else "anonymous"
