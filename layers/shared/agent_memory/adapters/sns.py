"""SNS adapter of the :class:`~agent_memory.ports.Notifier` port.

One ``sns.publish`` per alert on the admin-alert topic. The message carries the attributes
``project_id`` and ``kind``, so each admin's subscription can filter on its projects (a
subscription filter policy), which is how an alert reaches "the project's admins". A failed
publish raises :class:`~agent_memory.domain.errors.ExternalServiceError`, never a botocore
exception.
"""

from __future__ import annotations

from typing import Any

from agent_memory.adapters.errors import service_error
from agent_memory.domain.jobs import Alert


class SnsNotifier:
    """Publishes alerts to ``topic_arn`` with a boto3 SNS client (created lazily if not given)."""

    def __init__(self, topic_arn: str, client: Any | None = None) -> None:
        self._topic_arn = topic_arn
        self._client = client

    def _sns(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("sns")
        return self._client

    def notify(self, alert: Alert) -> None:
        """``sns.publish(TopicArn, Subject, Message, MessageAttributes)``.

        Raises:
            ExternalServiceError: delivery failed (the caller releases its dedupe claim so a
                retry sends the alert again).
        """
        from botocore.exceptions import BotoCoreError, ClientError

        attributes = {
            "project_id": {"DataType": "String", "StringValue": alert.project_id},
            "kind": {"DataType": "String", "StringValue": alert.kind},
        }
        try:
            self._sns().publish(
                TopicArn=self._topic_arn,
                Subject=alert.subject,
                Message=alert.message,
                MessageAttributes=attributes,
            )
        except (BotoCoreError, ClientError) as exc:
            raise service_error("sns", exc) from exc


__all__ = ["SnsNotifier"]
