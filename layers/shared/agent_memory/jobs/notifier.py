"""Alerts to a project's admins: capping an alert to the notifier's limits, and a notifier that
only logs (local runs). The port is ``agent_memory.ports.Notifier``; the SNS adapter is
:mod:`agent_memory.adapters.sns`.

Alert text holds counts, token numbers and line ids, never message text; the subject is
ASCII (SNS requires it) and both are byte-capped with ``truncate_utf8``.
"""

from __future__ import annotations

from agent_memory.domain.jobs import Alert
from agent_memory.domain.text import truncate_utf8
from agent_memory.observability import logger

#: SNS subjects must be ASCII and under 100 characters.
SUBJECT_MAX_BYTES = 99


def cap_alert(alert: Alert, max_bytes: int) -> Alert:
    """The alert with an ASCII subject of at most 99 bytes and a message of at most
    ``max_bytes`` UTF-8 bytes (never splitting a character)."""
    subject = alert.subject.encode("ascii", "replace").decode("ascii").replace("\n", " ")
    return alert.model_copy(
        update={
            "subject": truncate_utf8(subject, SUBJECT_MAX_BYTES),
            "message": truncate_utf8(alert.message, max_bytes),
        }
    )


class LoggingNotifier:
    """For local runs without a topic: logs the alert's kind and project (never its text)."""

    def notify(self, alert: Alert) -> None:
        """Log one warning line naming the alert kind, project and dedupe key."""
        logger.warning(
            "admin alert (no topic configured)",
            extra={"alert_kind": alert.kind, "project_id": alert.project_id, "dedupe_key": alert.dedupe_key},
        )


__all__ = ["LoggingNotifier", "cap_alert"]
