"""The WeCom callback function's routes: ``GET|POST /v1/wecom/{project_id}/callback`` (no token).

WeCom (企业微信) calls a project's callback URL as its 回调加解密 protocol says: a ``GET`` to verify
the URL (answered with the decrypted ``echostr``), a ``POST`` for each message (an XML envelope,
AES-encrypted, signed in ``msg_signature``). The routes are public in the API's sense (no JWT:
WeCom sends none) and authenticated by that protocol with the project's own channel secret
(``agent_memory.channels.wecom``); the HTTP API throttles them. A message is put on the inbound
queue and acknowledged at once with an empty 200 (WeCom waits 5 s, then sends it again; the
consumer is idempotent on the ``MsgId``). Nothing of a request's content is logged.

Why a function of its own: it reads the projects' channel secrets and sends to one queue, and
nothing else (no table, no LLM).
"""

# No ``from __future__ import annotations``: Powertools resolves the query and dependency
# annotations at runtime.
from dataclasses import dataclass
from typing import Annotated

from agent_memory.channels.wecom import WeComCallbackDeps, accept_callback, verify_callback_url
from agent_memory.domain.wecom import WeComCallbackParams
from agent_memory.http.guard import guarded_resolver
from agent_memory.http.powertools import APIGatewayHttpResolver, Depends, Query, Request, Response
from agent_memory.http.routing import Routes
from agent_memory.observability import metrics

routes = Routes()
_PATH = "/v1/wecom/<project_id>/callback"
#: Every WeCom callback's signature parameters (WeCom's are a 40-character SHA-1, ten digits, a
#: short decimal nonce); longer values are refused before anything is read.
Signature = Annotated[str, Query(min_length=1, max_length=64, description="SHA-1 (hex) WeCom signed the callback with")]
Timestamp = Annotated[str, Query(min_length=1, max_length=12, description="epoch seconds (UTC) of the callback")]
Nonce = Annotated[str, Query(min_length=1, max_length=64)]
Echostr = Annotated[str, Query(min_length=1, max_length=1024, description="the encrypted string to decrypt")]
_RULES = {
    400: "a parameter, the XML envelope or the ciphertext is not in WeCom's form (`malformed_request`)",
    401: "WeCom's signature does not match this project's channel (`signature_invalid`; also for a project "
         "without a WeCom channel), or the timestamp is more than 5 minutes from now (`callback_stale`)",
    403: "the decrypted message names another corp id or application (`receiver_mismatch`)",
    502: "the project's channel secret cannot be read",
    503: "the secret store or the inbound queue is busy; WeCom sends the callback again",
}
_TEXT = {"content": {"text/plain": {"schema": {"type": "string"}}}}


@dataclass(frozen=True)
class WeComCallbackFunctionDeps:
    """The callback function's collaborators (built by ``wiring.build_wecom_callback_function``)."""

    callback: WeComCallbackDeps


def function_deps() -> WeComCallbackFunctionDeps:
    """The function's collaborators: given to the resolver by :func:`wecom_callback_app`."""
    raise RuntimeError("the WeCom callback function's collaborators are given by wecom_callback_app()")


Deps = Annotated[WeComCallbackFunctionDeps, Depends(function_deps)]
_PLAIN = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


@routes.get(_PATH, "public", rules=_RULES, responses={200: {"description": "the decrypted echostr", **_TEXT}})
def verify_url(
    project_id: str, deps: Deps, msg_signature: Signature, timestamp: Timestamp, nonce: Nonce, echostr: Echostr
) -> Response[str]:
    """WeCom's URL verification (no token: WeCom's signature with the project's channel Token)."""
    params = WeComCallbackParams(msg_signature=msg_signature, timestamp=timestamp, nonce=nonce)
    plain = verify_callback_url(deps.callback, project_id, params, echostr)
    return Response(status_code=200, content_type="text/plain; charset=utf-8", body=plain, headers=_PLAIN)


@routes.post(_PATH, "public", raw_body="text/xml", rules={
    **_RULES, 413: "the body is over 65,536 bytes",
}, responses={200: {"description": "received (an empty body: WeCom's acknowledgement)", **_TEXT}})
def receive(
    project_id: str, deps: Deps, request: Request, msg_signature: Signature, timestamp: Timestamp, nonce: Nonce
) -> Response[str]:
    """A WeCom message for the project (no token: WeCom's signature); queued, answered at once."""
    params = WeComCallbackParams(msg_signature=msg_signature, timestamp=timestamp, nonce=nonce)
    outcome = accept_callback(deps.callback, project_id, params, request.resolved_event.decoded_body or "")
    metrics.add_metric(name="WeComMessagesQueued" if outcome == "queued" else "WeComEventsIgnored",
                       unit="Count", value=1)
    return Response(status_code=200, content_type="text/plain; charset=utf-8", body="", headers=_PLAIN)


def wecom_callback_app(deps: WeComCallbackFunctionDeps) -> APIGatewayHttpResolver:
    """The WeCom callback function's event handler (public routes: no membership is read)."""
    return guarded_resolver(routes, membership=None, provide={function_deps: deps})


__all__ = ["WeComCallbackFunctionDeps", "routes", "wecom_callback_app"]
