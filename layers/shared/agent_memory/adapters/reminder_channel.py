"""Where a reminder goes when it fires (port :class:`~agent_memory.ports.ReminderChannel`):

- the ``ReminderTopic`` SNS topic, with the message attributes ``project_id`` and ``user_id``, so a
  client app subscribes with a filter policy for its user (``{"user_id": ["u-1"]}``);
- when the project has a webhook (``WEBHOOK`` item: URL and the name of the secret holding its
  key, which must be the project's own: ``key_of`` refuses any other), an HTTP POST of the same JSON
  body, signed: ``X-Reminder-Timestamp: <unix seconds>`` and
  ``X-Reminder-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>" with the key>``.

The webhook is checked before anything is sent: its URL's form against the egress policy
(``policy``), its key read. The POST goes through a ``requests`` session:
``agent_memory.adapters.egress.guarded_session`` (the egress policy checked on every connection;
docs/architecture.md, "Egress policy") when the wiring passes one. Redirects are never followed
(the body would go to an address nobody set).

A failed publish or POST raises :class:`~agent_memory.domain.errors.ExternalServiceError`: the
scheduler retries the invocation, then sends it to the dead-letter queue. A webhook that cannot be
used raises before the topic is published to (a retry would publish twice), with a code that is not
retryable: ``EgressRefused`` (the URL or the address it reached; nothing was sent),
``WebhookKeyNotSet`` (no key, or a record naming another secret: an admin sets the webhook again),
``WebhookKeyUnreadable``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent_memory.adapters.errors import coded_error, service_error
from agent_memory.domain.errors import EgressBlocked, EgressRefused, SecretNotSet, SecretUnreadable
from agent_memory.domain.reminders import ReminderDelivery

if TYPE_CHECKING:
    import requests

    from agent_memory.domain.egress import EgressPolicy

SIGNATURE_HEADER = "X-Reminder-Signature"
TIMESTAMP_HEADER = "X-Reminder-Timestamp"
WEBHOOK_TIMEOUT_S = 5.0


def sign(key: bytes, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256 of ``timestamp + "." + body`` (what a receiver recomputes)."""
    return "sha256=" + hmac.new(key, timestamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest()


class SnsWebhookChannel:
    """Delivers to the reminder topic and, when configured, the project's webhook.

    ``webhook_of(project_id) -> (url, secret name) | None``; ``key_of(project_id, secret name) ->
    key`` (raises ``SecretNotSet`` / ``SecretUnreadable``: see
    ``agent_memory.reminders.webhook.webhook_key``); ``http``: the session POSTs go through (None: a
    plain one, without the environment's proxies); ``policy``: the egress policy the URL's form is
    checked against before anything is sent (None: the session's own checks only).
    """

    def __init__(
        self,
        topic_arn: str,
        *,
        webhook_of: Callable[[str], tuple[str, str] | None],
        key_of: Callable[[str, str], str],
        sns_client: Any | None = None,
        clock: Callable[[], float] = time.time,
        http: requests.Session | None = None,
        policy: EgressPolicy | None = None,
    ) -> None:
        self._topic_arn = topic_arn
        self._webhook_of = webhook_of
        self._key_of = key_of
        self._client = sns_client
        self._clock = clock
        self._http = http
        self._policy = policy

    def _session(self) -> requests.Session:
        if self._http is None:
            import requests

            self._http = requests.Session()
            self._http.trust_env = False
        return self._http

    def _sns(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("sns")
        return self._client

    def deliver(self, delivery: ReminderDelivery) -> list[str]:
        """Publish, then POST to the webhook if there is one; returns the channels used."""
        from botocore.exceptions import BotoCoreError, ClientError

        body = delivery.model_dump_json()
        hook = self._usable_webhook(delivery.project_id)
        used: list[str] = []
        if self._topic_arn:
            try:
                self._sns().publish(
                    TopicArn=self._topic_arn,
                    Subject="Reminder",
                    Message=body,
                    MessageAttributes={
                        "project_id": {"DataType": "String", "StringValue": delivery.project_id},
                        "user_id": {"DataType": "String", "StringValue": delivery.user_id},
                    },
                )
            except (BotoCoreError, ClientError) as exc:
                raise service_error("sns", exc) from exc
            used.append("sns")
        if hook is not None:
            self._post(hook[0], hook[1], body.encode("utf-8"))
            used.append("webhook")
        return used

    def _usable_webhook(self, project_id: str) -> tuple[str, str] | None:
        """The project's webhook ``(url, key)``, checked before anything is sent; None without one.

        Raises:
            ExternalServiceError: ``EgressRefused``, ``WebhookKeyNotSet`` or ``WebhookKeyUnreadable``
                (not retryable; see the module docstring).
        """
        hook = self._webhook_of(project_id)
        if hook is None:
            return None
        url, secret_name = hook
        try:
            if self._policy is not None:
                self._policy.check_form(url)
            return url, self._key_of(project_id, secret_name)
        except EgressRefused:
            raise coded_error("webhook", "EgressRefused") from None
        except SecretNotSet:
            raise coded_error("webhook", "WebhookKeyNotSet") from None
        except SecretUnreadable:
            raise coded_error("webhook", "WebhookKeyUnreadable") from None

    def _post(self, url: str, key: str, body: bytes) -> None:
        import requests

        timestamp = str(int(self._clock()))
        headers = {
            "Content-Type": "application/json",
            TIMESTAMP_HEADER: timestamp,
            SIGNATURE_HEADER: sign(key.encode("utf-8"), timestamp, body),
        }
        try:
            response = self._session().post(url, data=body, headers=headers, timeout=WEBHOOK_TIMEOUT_S,
                                             allow_redirects=False)
        except EgressBlocked as exc:
            raise coded_error("webhook", "EgressRefused") from exc
        except requests.RequestException as exc:
            raise coded_error("webhook", None) from exc
        if not 200 <= response.status_code < 300:
            raise coded_error("webhook", f"HTTP{response.status_code}")


def json_body(delivery: ReminderDelivery) -> dict[str, Any]:
    """The delivered JSON as a dict (what subscribers and the webhook receive)."""
    return dict(json.loads(delivery.model_dump_json()))


__all__ = ["SIGNATURE_HEADER", "TIMESTAMP_HEADER", "SnsWebhookChannel", "json_body", "sign"]
