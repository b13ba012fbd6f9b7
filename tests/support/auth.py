"""Tokens for tests that call the local HTTP API (verified like API Gateway's JWT authorizer).

The one place tests get their bearer tokens from (``infra.local.token`` signs them with the local
key the local stack verifies against).
"""

from __future__ import annotations

from collections.abc import Mapping

import requests

from infra.local.token import mint_token

#: The dev user of the integration tests: admin of both demo projects.
DEV_USER = "dev"
DEV_PROJECTS = "demo-iit:admin,demo-clinic:admin"


def bearer(projects: str | Mapping[str, str] = DEV_PROJECTS, user: str = DEV_USER) -> dict[str, str]:
    """An ``Authorization`` header for ``user`` in ``projects`` (``"p1:admin,p2:member"`` or a dict)."""
    entries = projects if isinstance(projects, Mapping) else [p for p in projects.split(",") if p]
    return {"Authorization": f"Bearer {mint_token(user, entries)}"}


def authorized_session(projects: str | Mapping[str, str] = DEV_PROJECTS, user: str = DEV_USER) -> requests.Session:
    """A ``requests`` session that sends the bearer token on every request."""
    session = requests.Session()
    session.headers.update(bearer(projects, user))
    return session
