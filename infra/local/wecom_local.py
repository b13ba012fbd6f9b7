"""WeCom in the local stack (``make run``): the WeCom API emulator, demo-iit's WeCom channel, and
Lambda's SQS event sources of the WeCom queues.

- :func:`start_demo_wecom`: the emulator (:mod:`infra.local.wecom_emulator`, port
  ``WECOM_EMULATOR_PORT`` or a free one) with one self-built application whose credentials are
  drawn anew at every start (local only; ``.local/stack.json`` holds them for ``make wecom-say``);
- :func:`provision_demo_channel`: demo-iit's channel as an admin's ``PUT .../channels/wecom`` would
  leave it (the secret in moto Secrets Manager under the template's ``ChannelSecretPrefix``, the
  ``CHANNEL#wecom`` record) and the demo team's WeCom user ids (``crc-li`` is ``crc.li``, ...);
- :class:`QueuePoller`: what Lambda's event source mappings do in AWS for the WeCom queues: it
  delivers their messages to their functions (:func:`infra.local.sqs_events.deliver`: partial batch
  responses, redrive to the dead-letter queue after ``maxReceiveCount``) after any function of the
  stack was invoked (only the stack's functions send to these queues), until they are empty; idle,
  it makes no call (no SQS traffic against moto, nothing in a test's count of AWS calls). The job
  queue is not polled: ``make job`` / ``make dispatch`` deliver it by hand, to show each run.
"""

from __future__ import annotations

import secrets
import string
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from infra.local.sqs_events import deliver
from infra.local.wecom_emulator import EmulatedApp, WeComEmulator
from infra.template_model import queue_event_specs

if TYPE_CHECKING:
    from agent_memory.domain.wecom import WeComChannelSettings
    from infra.local.stack import LocalStack

DEMO_PROJECT = "demo-iit"
DEMO_AGENT_ID = 1000002
#: The queues whose SQS event sources run locally, by the functions they feed.
POLLED_FUNCTIONS = ("WeComInboundFunction", "WeComSenderFunction")
_ALNUM = string.ascii_letters + string.digits


def _random(alphabet: str, length: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(length))


def demo_wecom_userid(user_id: str) -> str:
    """The demo team member's WeCom user id: ``crc-li`` -> ``crc.li``."""
    return user_id.replace("-", ".")


@dataclass
class DemoWeCom:
    """The emulator and the demo application's settings (the credentials of this start)."""

    emulator: WeComEmulator
    settings: WeComChannelSettings

    def describe(self) -> dict[str, Any]:
        """What ``make wecom-say`` needs (local demo credentials only)."""
        s = self.settings
        return {
            "emulator_url": self.emulator.base_url, "project": DEMO_PROJECT, "corp_id": s.corp_id,
            "agent_id": s.agent_id, "token": s.token.get_secret_value(),
            "encoding_aes_key": s.encoding_aes_key.get_secret_value(),
            "robot_webhook_key": s.robot_webhook_key.get_secret_value() if s.robot_webhook_key else None,
        }

    def stop(self) -> None:
        self.emulator.stop()


def start_demo_wecom(port: int = 0) -> DemoWeCom:
    """Start the emulator with a new demo application (corp id, Secret, Token, EncodingAESKey and a
    group robot's key drawn now)."""
    from pydantic import SecretStr

    from agent_memory.domain.wecom import WeComChannelSettings

    settings = WeComChannelSettings(
        corp_id="ww" + secrets.token_hex(8), agent_id=DEMO_AGENT_ID, token=SecretStr(_random(_ALNUM, 32)),
        encoding_aes_key=SecretStr(_random(_ALNUM, 43)), secret=SecretStr(secrets.token_urlsafe(32)),
        robot_webhook_key=SecretStr(str(secrets.token_hex(16))),
    )
    app = EmulatedApp(settings.corp_id, settings.agent_id, settings.secret.get_secret_value())
    key = settings.robot_webhook_key.get_secret_value() if settings.robot_webhook_key else ""
    emulator = WeComEmulator([app], robot_keys=[key], port=port).start()
    return DemoWeCom(emulator=emulator, settings=settings)


def provision_demo_channel(stack: LocalStack, demo: DemoWeCom, *, now: datetime | None = None) -> None:
    """demo-iit's WeCom channel (secret, then record) and its demo team's WeCom user ids (a member
    who already has one, or whose id another member has, is left as is). Nothing when demo-iit is gone."""
    from agent_memory.adapters.dynamo.channels import WeComChannelRepository
    from agent_memory.adapters.secrets import SecretsManagerProjectSecrets
    from agent_memory.domain.errors import AlreadyExists, ProjectNotFound
    from agent_memory.domain.secrets import SecretNaming
    from infra.local.demo.seed import DEMO_TEAM

    members = stack.members
    try:
        members.get_project(DEMO_PROJECT)
    except ProjectNotFound:
        return
    naming = SecretNaming(channel_prefix=stack.env["CHANNEL_SECRET_PREFIX"])
    SecretsManagerProjectSecrets(stack.aws_client("secretsmanager")).put(
        naming.channel(DEMO_PROJECT, "wecom"), demo.settings.to_secret())
    WeComChannelRepository().put_channel(demo.settings.record(DEMO_PROJECT, actor="seed", now=now or datetime.now(UTC)))
    for user_id, *_ in DEMO_TEAM:
        member = members.get_member(DEMO_PROJECT, user_id)
        if member is not None and member.wecom_userid is None:
            try:
                members.put_member(member.model_copy(update={"wecom_userid": demo_wecom_userid(user_id)}))
            except AlreadyExists:
                continue


class QueuePoller:
    """Delivers the messages of the queues feeding :data:`POLLED_FUNCTIONS` to those functions in a
    daemon thread, a round each time :meth:`poke` was called since the last (see the module docstring)."""

    def __init__(self, stack: LocalStack, template: Any, *, on_error: Callable[[str], None] = print) -> None:
        self._stack = stack
        self._sources = [spec for spec in queue_event_specs(template) if spec.function in POLLED_FUNCTIONS]
        self._on_error = on_error
        self._stop = threading.Event()
        self._poked = threading.Event()
        self._thread: threading.Thread | None = None
        self._sqs: Any = None

    def poke(self) -> None:
        """Something may have been queued (a function of the stack ran): poll once more."""
        self._poked.set()

    def poll(self) -> int:
        """Deliver what each polled queue holds now; returns the records delivered."""
        if self._sqs is None:
            self._sqs = self._stack.aws_client("sqs")
        sqs = self._sqs
        delivered = 0
        for spec in self._sources:
            queue = self._stack.resources[spec.queue]
            invoke = self._invoker(spec.function)
            delivered += deliver(sqs, queue.ref, queue.arn, invoke, batch_size=spec.batch_size).records
        return delivered

    def _invoker(self, function: str) -> Callable[[dict[str, Any]], Any]:
        def invoke(event: dict[str, Any]) -> Any:
            return self._stack.invoke(function, event)

        return invoke

    def start(self) -> QueuePoller:
        """Poll in a daemon thread, after each :meth:`poke`, until :meth:`stop`."""

        def loop() -> None:
            while self._poked.wait() and not self._stop.is_set():
                self._poked.clear()  # a poke during the round makes another round
                try:
                    self.poll()
                except Exception as exc:  # the poller must outlive one bad round; the stack keeps serving
                    self._on_error(f"WeCom queue poller: {type(exc).__name__}: {exc}")

        self._thread = threading.Thread(target=loop, name="wecom-queues", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._poked.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


__all__ = ["DEMO_PROJECT", "DemoWeCom", "QueuePoller", "demo_wecom_userid", "provision_demo_channel",
           "start_demo_wecom"]
