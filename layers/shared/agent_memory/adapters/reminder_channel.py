"""Where a reminder goes when it fires (port :class:`~agent_memory.ports.ReminderChannel`):

- the ``ReminderTopic`` SNS topic, with the message attributes ``project_id`` and ``user_id``, so a
  client app subscribes with a filter policy for its user (``{"user_id": ["u-1"]}``);
- when the project has a webhook (``WEBHOOK`` item: URL and the name of the Secrets Manager secret
  holding its key), an HTTP POST of the same JSON body, signed:
  ``X-Reminder-Timestamp: <unix seconds>`` and
  ``X-Reminder-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>" with the key>``.

The POST goes through a ``requests`` session: ``agent_memory.adapters.egress.guarded_session``
(the egress policy checked on every connection; docs/architecture.md, "Egress policy") when the
wiring passes one. Redirects are never followed (the body would go to an address nobody set).

A failed publish or POST raises :class:`~agent_memory.domain.errors.ExternalServiceError`: the
scheduler retries the invocation, then sends it to the dead-letter queue; a POST the egress policy
refuses is code ``EgressRefused`` (not retryable: nothing was sent).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent_memory.adapters.errors import coded_error, service_error
from agent_memory.domain.errors import EgressBlocked
from agent_memory.domain.reminders import ReminderDelivery

if TYPE_CHECKING:
    import requests

SIGNATURE_HEADER = "X-Reminder-Signature"
TIMESTAMP_HEADER = "X-Reminder-Timestamp"
WEBHOOK_TIMEOUT_S = 5.0


def sign(key: bytes, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256 of ``timestamp + "." + body`` (what a receiver recomputes)."""
    return "sha256=" + hmac.new(key, timestamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest()


class SnsWebhookChannel:
    """Delivers to the reminder topic and, when configured, the project's webhook.

    ``webhook_of(project_id) -> (url, secret name) | None``; ``secret_of(name) -> key``
    (Powertools Parameters in AWS); ``http``: the session POSTs go through (None: a plain one,
    without the environment's proxies).
    """

    def __init__(
        self,
        topic_arn: str,
        *,
        webhook_of: Callable[[str], tuple[str, str] | None],
        secret_of: Callable[[str], str],
        sns_client: Any | None = None,
        clock: Callable[[], float] = time.time,
        http: requests.Session | None = None,
    ) -> None:
        self._topic_arn = topic_arn
        self._webhook_of = webhook_of
        self._secret_of = secret_of
        self._client = sns_client
        self._clock = clock
        self._http = http

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
        hook = self._webhook_of(delivery.project_id)
        if hook is not None:
            self._post(hook[0], self._secret_of(hook[1]), body.encode("utf-8"))
            used.append("webhook")
        return used

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
