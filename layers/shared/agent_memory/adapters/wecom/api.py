"""WeCom's server API: access tokens, application messages to a member, the group robot.

Calls (base URL :data:`DEFAULT_BASE_URL`, the local emulator in ``make run``):

- ``GET /cgi-bin/gettoken?corpid=&corpsecret=`` -> ``access_token``, ``expires_in`` (7,200 s);
  tokens are cached per container for each corp id, application and secret (a project that names
  another project's corp id and application with another secret never gets its token) until
  :data:`TOKEN_REFRESH_MARGIN_S` before they expire;
- ``POST /cgi-bin/message/send?access_token=`` (``msgtype`` text or markdown, ``touser``,
  ``agentid``); WeCom answering that the token is invalid or expired (:data:`TOKEN_ERRCODES`)
  drops it, fetches a new one and sends once more;
- ``POST /cgi-bin/webhook/send?key=`` (the group robot; text or markdown).

Every answer is WeCom's JSON ``{"errcode", "errmsg", ...}``. System busy (-1), a rate limit
(45009), HTTP 429 / 5xx, a connection failure or a timeout are retried with tenacity's jittered
exponential backoff (at most :data:`MAX_ATTEMPTS` tries), then raised as a retryable
:class:`~agent_memory.domain.errors.ExternalServiceError` (the queue delivers again, then
dead-letters). Any other errcode is not retried (``retryable=False``). A long answer is split at
WeCom's limits (:mod:`.split`).

Outbound requests: before each, ``check_url`` (the egress policy, injected by wiring) is called with
the URL without its query string and may raise to refuse it; redirects are not followed. The
access token, the secret, the robot key and the message text are never logged or put in an error:
errors raised here carry no cause (``from None``), since a ``requests`` error's text holds the URL
with its query string.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from agent_memory.adapters.wecom.split import (
    APP_MARKDOWN_LIMIT_BYTES,
    APP_TEXT_LIMIT_BYTES,
    ROBOT_MARKDOWN_LIMIT_BYTES,
    ROBOT_TEXT_LIMIT_BYTES,
    split_message,
)
from agent_memory.domain.errors import ExternalServiceError
from agent_memory.observability import logger

if TYPE_CHECKING:
    import requests
    from pydantic import SecretStr
    from tenacity.wait import WaitBaseT

    from agent_memory.domain.wecom import WeComChannelSettings, WeComOutboundPart

#: WeCom's API host.
DEFAULT_BASE_URL = "https://qyapi.weixin.qq.com"
#: A cached token is fetched again this long before WeCom says it expires (seconds).
TOKEN_REFRESH_MARGIN_S = 300
#: Most tries of one call answered with a transient fault.
MAX_ATTEMPTS = 4
#: Longest wait for one HTTP answer (seconds: connect, then read).
REQUEST_TIMEOUT_S = 5.0
#: errcodes that mean "the access token is not valid (any more)": 40001 invalid credential,
#: 40014 invalid access_token, 42001 access_token expired.
TOKEN_ERRCODES = frozenset({40001, 40014, 42001})
#: errcodes worth another try: -1 system busy, 45009 API rate limit reached.
TRANSIENT_ERRCODES = frozenset({-1, 45009})

#: The egress check: called with a URL (no query string) before it is requested; raises to refuse.
UrlCheck = Callable[[str], None]


def allow_every_url(url: str) -> None:
    """The check of tests and of the local emulator: allows every URL."""


def _post_all(parts: list[str], post: Callable[[str], None]) -> int:
    """Post each part in order (a failure stops the rest); returns how many parts there are."""
    for part in parts:
        post(part)
    return len(parts)


def _errcode(answer: dict[str, Any]) -> int:
    """WeCom's ``errcode`` (0 when absent); an answer whose errcode is not an integer is refused."""
    try:
        return int(answer.get("errcode") or 0)
    except (TypeError, ValueError):
        raise ExternalServiceError("wecom", "bad_errcode", retryable=False) from None


class _Transient(Exception):
    """A fault worth another try; ``code`` is WeCom's errcode or ``HTTP<status>``, None without answer."""

    def __init__(self, code: str | None) -> None:
        super().__init__(code)
        self.code = code


class _TokenRejected(Exception):
    """WeCom refused the access token (:data:`TOKEN_ERRCODES`)."""


@dataclass(frozen=True)
class _CachedToken:
    value: str
    refresh_at: float  # monotonic seconds


class AccessTokenCache:
    """Access tokens by (base URL, corp id, agent id, SHA-256 of the secret); thread-safe.

    ``clock`` is monotonic seconds. One instance per container is shared by every client
    (:data:`SHARED_TOKENS`), as a token is good for every call until it expires.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._tokens: dict[tuple[str, str, int, str], _CachedToken] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, int, str]) -> str | None:
        """The cached token, or None when there is none or it is due for refresh."""
        with self._lock:
            cached = self._tokens.get(key)
        return cached.value if cached is not None and self._clock() < cached.refresh_at else None

    def put(self, key: tuple[str, str, int, str], token: str, expires_in_s: float) -> None:
        """Keep ``token`` until :data:`TOKEN_REFRESH_MARGIN_S` before its ``expires_in``."""
        refresh_at = self._clock() + max(0.0, expires_in_s - TOKEN_REFRESH_MARGIN_S)
        with self._lock:
            self._tokens[key] = _CachedToken(token, refresh_at)

    def drop(self, key: tuple[str, str, int, str], token: str) -> None:
        """Forget ``token`` (WeCom refused it), unless another call already replaced it."""
        with self._lock:
            cached = self._tokens.get(key)
            if cached is not None and cached.value == token:
                del self._tokens[key]


#: The container's token cache.
SHARED_TOKENS = AccessTokenCache()


class WeComApi:
    """WeCom's API for one deployment (see module docstring).

    Args:
        base_url: WeCom's API host (no trailing slash); the emulator locally.
        check_url: the egress check (:data:`UrlCheck`).
        session: the ``requests`` session (wiring may mount a transport adapter that checks the
            connected address); a new one by default.
        tokens: the token cache (:data:`SHARED_TOKENS` by default).
        wait: tenacity's wait between tries (tests pass ``wait_none()``).
        max_attempts: most tries of a transient fault.
        timeout_s: the longest wait for one HTTP answer (seconds).
    """

    def __init__(
        self,
        *,
        base_url: str = DEFAULT_BASE_URL,
        check_url: UrlCheck = allow_every_url,
        session: requests.Session | None = None,
        tokens: AccessTokenCache | None = None,
        wait: WaitBaseT | None = None,
        max_attempts: int = MAX_ATTEMPTS,
        timeout_s: float = REQUEST_TIMEOUT_S,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._check_url = check_url
        self._session = session
        self._tokens = tokens if tokens is not None else SHARED_TOKENS
        self._wait = wait if wait is not None else wait_random_exponential(multiplier=0.5, max=4)
        self._max_attempts = max_attempts
        self._timeout_s = timeout_s

    # --------------------------------------------------------------- the API
    def access_token(self, app: WeComChannelSettings) -> str:
        """A valid access token of ``app`` (cached; ``gettoken`` when there is none).

        Raises:
            ExternalServiceError: ``wecom``, WeCom's errcode (40013 invalid corp id, 40001 invalid
                secret, ...); retryable for a transient fault only.
        """
        key = self._token_key(app)
        cached = self._tokens.get(key)
        if cached is not None:
            return cached
        answer = self._call(
            "GET", "/cgi-bin/gettoken",
            params={"corpid": app.corp_id, "corpsecret": app.secret.get_secret_value()}, token_call=True,
        )
        token = answer.get("access_token")
        if not isinstance(token, str) or not token:
            raise ExternalServiceError("wecom", "no_access_token", retryable=False)
        self._tokens.put(key, token, float(answer.get("expires_in") or 7200))
        return token

    def send_to_member(self, app: WeComChannelSettings, userid: str, text: str, *, markdown: bool = False) -> int:
        """Send ``text`` to member ``userid`` as application ``app.agent_id``, split at WeCom's
        limits (2,048 bytes for text and for markdown), the parts in order.

        Returns:
            How many parts the answer has.

        Raises:
            ExternalServiceError: see :meth:`access_token`; 81013 when the user is not in the
                application's visible range; a part that failed stops the rest.
        """
        limit = APP_MARKDOWN_LIMIT_BYTES if markdown else APP_TEXT_LIMIT_BYTES
        msgtype = "markdown" if markdown else "text"

        def post(part: str) -> None:
            self._send_with_token(
                app, {"touser": userid, "msgtype": msgtype, "agentid": app.agent_id, msgtype: {"content": part}}
            )

        return _post_all(split_message(text, limit, markdown=markdown), post)

    def send_to_robot(self, webhook_key: SecretStr, text: str, *, markdown: bool = True) -> int:
        """Post ``text`` through a group robot's webhook, split at its limits (text 2,048 bytes,
        markdown 4,096 bytes), the parts in order.

        Returns:
            How many parts the answer has.

        Raises:
            ExternalServiceError: ``wecom``, WeCom's errcode (93000: the key is not a robot's).
        """
        limit = ROBOT_MARKDOWN_LIMIT_BYTES if markdown else ROBOT_TEXT_LIMIT_BYTES
        msgtype = "markdown" if markdown else "text"

        def post(part: str) -> None:
            self._call("POST", "/cgi-bin/webhook/send", params={"key": webhook_key.get_secret_value()},
                       body={"msgtype": msgtype, msgtype: {"content": part}})

        return _post_all(split_message(text, limit, markdown=markdown), post)

    def send_part(self, settings: WeComChannelSettings, part: WeComOutboundPart) -> None:
        """Send one part of an outbound message (port ``WeComSender``): to its member as an
        application text message, or through the channel's group robot as Markdown.

        Raises:
            ExternalServiceError: see :meth:`send_to_member` / :meth:`send_to_robot`; ``no_robot``
                (not retryable) for a robot message of a channel without a robot.
        """
        if part.to_userid is not None:
            self.send_to_member(settings, part.to_userid, part.content, markdown=part.markdown)
        elif settings.robot_webhook_key is not None:
            self.send_to_robot(settings.robot_webhook_key, part.content, markdown=part.markdown)
        else:
            raise ExternalServiceError("wecom", "no_robot", retryable=False)

    # ------------------------------------------------------------- internals
    def _token_key(self, app: WeComChannelSettings) -> tuple[str, str, int, str]:
        digest = hashlib.sha256(app.secret.get_secret_value().encode("utf-8")).hexdigest()
        return (self._base_url, app.corp_id, app.agent_id, digest)

    def _send_with_token(self, app: WeComChannelSettings, body: dict[str, Any]) -> None:
        """``message/send`` with the cached token; a refused token is replaced once."""
        token = self.access_token(app)
        try:
            self._call("POST", "/cgi-bin/message/send", params={"access_token": token}, body=body)
        except _TokenRejected:
            logger.info("WeCom refused the access token; fetching a new one", extra={"agent_id": app.agent_id})
            self._tokens.drop(self._token_key(app), token)
            try:
                self._call("POST", "/cgi-bin/message/send", params={"access_token": self.access_token(app)},
                           body=body)
            except _TokenRejected:
                raise ExternalServiceError("wecom", "access_token_refused", retryable=True) from None

    def _call(
        self, method: str, path: str, *, params: dict[str, str], body: dict[str, Any] | None = None,
        token_call: bool = False,
    ) -> dict[str, Any]:
        """One API call with backoff on transient faults; WeCom's JSON answer (errcode 0).

        Raises:
            _TokenRejected: a :data:`TOKEN_ERRCODES` answer to a call that used a token.
            ExternalServiceError: any other failure (retryable after the last transient one).
        """
        url = self._base_url + path
        self._check_url(url)
        retrying = Retrying(
            retry=retry_if_exception_type(_Transient), stop=stop_after_attempt(self._max_attempts),
            wait=self._wait, reraise=True,
        )
        try:
            answer: dict[str, Any] = retrying(self._attempt, method, url, params, body)
        except _Transient as exc:
            logger.warning("WeCom call failed after retries", extra={"path": path, "code": exc.code})
            raise ExternalServiceError("wecom", exc.code, retryable=True) from None
        errcode = _errcode(answer)
        if errcode == 0:
            return answer
        if errcode in TOKEN_ERRCODES and not token_call:
            raise _TokenRejected()
        logger.warning("WeCom refused a call", extra={"path": path, "errcode": errcode})
        raise ExternalServiceError("wecom", str(errcode), retryable=False)

    def _attempt(self, method: str, url: str, params: dict[str, str], body: dict[str, Any] | None) -> dict[str, Any]:
        """One HTTP request; a transient fault raises :class:`_Transient`."""
        import requests

        data = json.dumps(body, ensure_ascii=False).encode("utf-8") if body is not None else None
        headers = {"Content-Type": "application/json; charset=utf-8"} if body is not None else {}
        try:
            response = self._http().request(
                method, url, params=params, data=data, headers=headers, timeout=self._timeout_s,
                allow_redirects=False,
            )
        except requests.RequestException:
            raise _Transient(None) from None
        if response.status_code == 429 or response.status_code >= 500:
            raise _Transient(f"HTTP{response.status_code}")
        if response.status_code != 200:
            raise ExternalServiceError("wecom", f"HTTP{response.status_code}", retryable=False)
        try:
            answer = response.json()
        except ValueError:
            raise _Transient("not_json") from None
        if not isinstance(answer, dict):
            raise _Transient("not_json")
        if _errcode(answer) in TRANSIENT_ERRCODES:
            raise _Transient(str(_errcode(answer)))
        return answer

    def _http(self) -> requests.Session:
        if self._session is None:
            import requests

            self._session = requests.Session()
        return self._session


__all__ = [
    "DEFAULT_BASE_URL",
    "SHARED_TOKENS",
    "TOKEN_ERRCODES",
    "TRANSIENT_ERRCODES",
    "AccessTokenCache",
    "UrlCheck",
    "WeComApi",
    "allow_every_url",
]
