"""Durable local Secrets Manager and EventBridge Scheduler: snapshots of moto's backends.

DynamoDB is kept by its after-image log (:mod:`infra.local.moto_persistence`). The two other
services the functions write while they run hold little and change seldom: the project secrets (an
admin sets a REDCap token or a webhook; a removal schedules their deletion) and the reminder
schedules. So each is kept whole:

* **Snapshot.** After a request that may change one of them (a Secrets Manager action that is not a
  read; a POST, PUT, PATCH or DELETE to EventBridge Scheduler), still inside the moto server's one
  request at a time and before the answer leaves, that service's whole state is written as JSON to
  a temporary file, flushed to the operating system and renamed over ``secretsmanager.json`` /
  ``scheduler.json`` in the data directory (atomic: a ``kill -9`` leaves the old or the new
  snapshot; not ``fsync``-ed per write, as the DynamoDB log).
* **Restore.** At start, before moto serves, each snapshot is replayed through the backend's own
  methods (``create_secret``, then ``delete`` for one awaiting deletion; ``create_schedule_group``,
  ``create_schedule``, then the schedule's own creation and modification dates), so moto builds its
  objects as it would for a request. Values are the
  secrets' current ones (their earlier versions are not kept); a schedule keeps its expression,
  time zone, target and ``ActionAfterCompletion``, so a one-time reminder due during the downtime
  is still there at start and fires then, once.

moto's objects are read, never patched: ``FakeSecret`` (name, description, tags, KMS key, the
current version's value, ``deleted_date``) and ``Schedule.to_dict()``; the round trip is checked
against moto's own API in ``tests/integration/test_local_durability.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

SECRETS_FILE = "secretsmanager.json"
SCHEDULER_FILE = "scheduler.json"
#: Secrets Manager actions that change nothing (its API reference); any other action snapshots.
_SECRETS_READS = frozenset({
    "GetSecretValue", "BatchGetSecretValue", "DescribeSecret", "ListSecrets", "ListSecretVersionIds",
    "GetRandomPassword", "GetResourcePolicy", "ValidateResourcePolicy",
})
_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

_data_dir: Path | None = None


# ------------------------------------------------------------------------------- which requests
def changed_service(environ: Mapping[str, Any]) -> str | None:
    """The service a WSGI request may have changed (``"secretsmanager"`` / ``"scheduler"``), or None
    (a read, or another service: DynamoDB keeps its own log)."""
    target = str(environ.get("HTTP_X_AMZ_TARGET") or "")
    if target.startswith("secretsmanager."):
        return None if target.partition(".")[2] in _SECRETS_READS else "secretsmanager"
    if target:  # DynamoDB, SQS and the other JSON-1.x services
        return None
    scope = str(environ.get("HTTP_AUTHORIZATION") or "")
    if "/scheduler/aws4_request" in scope and environ.get("REQUEST_METHOD") in _WRITE_METHODS:
        return "scheduler"
    return None


# ------------------------------------------------------------------------------- snapshots
def _backends(backend_dict: Any) -> Iterator[tuple[str, str, Any]]:
    """(account, region, backend) of every backend moto made so far."""
    for account_id, regions in list(backend_dict.items()):
        for region, backend in list(regions.items()):
            yield account_id, region, backend


def snapshot_secrets() -> list[dict[str, Any]]:
    """Every secret of every account and region, as :func:`restore_secrets` reads it."""
    from moto.secretsmanager.models import FakeSecret, secretsmanager_backends

    out: list[dict[str, Any]] = []
    for account_id, region, backend in _backends(secretsmanager_backends):
        for secret in list(backend.secrets.values()):
            if not isinstance(secret, FakeSecret):  # a replica of another region's secret
                continue
            current = secret.versions.get(secret.default_version_id or "", {})
            out.append({
                "a": account_id, "r": region, "name": secret.name, "description": secret.description,
                "tags": secret.tags, "kms_key_id": secret.kms_key_id, "string": current.get("secret_string"),
                "binary": current.get("secret_binary"), "deleted_date": secret.deleted_date,
            })
    return out


def restore_secrets(records: list[dict[str, Any]]) -> None:
    """Create each snapshot secret through the backend (then mark it deleted when it was)."""
    from moto.secretsmanager.models import FakeSecret, secretsmanager_backends

    for record in records:
        backend = secretsmanager_backends[record["a"]][record["r"]]
        backend.create_secret(
            name=record["name"], secret_string=record["string"], secret_binary=record["binary"],
            description=record["description"], tags=record["tags"], kms_key_id=record["kms_key_id"],
            client_request_token=None, replica_regions=[], force_overwrite=False,
        )
        secret = backend.secrets[record["name"]]
        if record["deleted_date"] is not None and isinstance(secret, FakeSecret):
            secret.delete(record["deleted_date"])


def snapshot_schedules() -> list[dict[str, Any]]:
    """Every schedule group (but ``default``) and schedule, as :func:`restore_schedules` reads them."""
    from moto.scheduler.models import scheduler_backends

    out: list[dict[str, Any]] = []
    for account_id, region, backend in _backends(scheduler_backends):
        for group in list(backend.schedule_groups.values()):
            tags = backend.list_tags_for_resource(group.arn).get("Tags", [])
            out.append({"a": account_id, "r": region, "group": group.name, "tags": tags,
                        "schedules": [s.to_dict() for s in group.schedules.values()]})
    return out


def restore_schedules(records: list[dict[str, Any]]) -> None:
    """Create each snapshot group (``default`` exists already) and its schedules through the backend."""
    from moto.scheduler.models import scheduler_backends

    for record in records:
        backend = scheduler_backends[record["a"]][record["r"]]
        if record["group"] not in backend.schedule_groups:
            backend.create_schedule_group(record["group"], record["tags"])
        for s in record["schedules"]:
            schedule = backend.create_schedule(
                description=s["Description"], end_date=s["EndDate"], flexible_time_window=s["FlexibleTimeWindow"],
                group_name=s["GroupName"], kms_key_arn=s["KmsKeyArn"], name=s["Name"],
                schedule_expression=s["ScheduleExpression"],
                schedule_expression_timezone=s["ScheduleExpressionTimezone"], start_date=s["StartDate"],
                state=s["State"], target=s["Target"], action_after_completion=s["ActionAfterCompletion"],
            )
            # its own dates, not the restart's (the reminder clock counts a recurring schedule's
            # occurrences from its creation: one missed during the downtime still fires once)
            schedule.creation_date, schedule.last_modified_date = s["CreationDate"], s["LastModificationDate"]


_SERVICES: dict[str, tuple[str, Callable[[], list[dict[str, Any]]], Callable[[list[dict[str, Any]]], None]]] = {
    "secretsmanager": (SECRETS_FILE, snapshot_secrets, restore_secrets),
    "scheduler": (SCHEDULER_FILE, snapshot_schedules, restore_schedules),
}


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    tmp = path.with_suffix(".json.tmp")
    with tmp.open("w", encoding="utf-8") as out:
        json.dump(records, out, ensure_ascii=False, separators=(",", ":"), default=str)
        out.flush()  # in the OS page cache before the request is acknowledged: survives kill -9
    os.replace(tmp, path)


# ------------------------------------------------------------------------------- the process
def enable(data_dir: Path) -> None:
    """Restore Secrets Manager and EventBridge Scheduler from ``data_dir`` (their snapshots, when
    present) and snapshot them after every request that may change them (:func:`after_request`).
    Call once, before moto serves, after :func:`infra.local.moto_persistence.enable` took the
    directory's lock.

    Raises:
        ValueError: a snapshot is not valid JSON (the directory is damaged).
    """
    global _data_dir
    for name, (file_name, _snapshot, restore) in _SERVICES.items():
        path = data_dir / file_name
        if not path.is_file():
            continue
        try:
            records = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            raise ValueError(f"{path}: the {name} snapshot is damaged") from None
        restore(records)
    _data_dir = data_dir


def after_request(environ: Mapping[str, Any]) -> None:
    """Snapshot the service the request may have changed (no-op until :func:`enable`)."""
    if _data_dir is None:
        return
    service = changed_service(environ)
    if service is not None:
        file_name, snapshot, _restore = _SERVICES[service]
        _write(_data_dir / file_name, snapshot())


__all__ = ["SCHEDULER_FILE", "SECRETS_FILE", "after_request", "changed_service", "enable"]
