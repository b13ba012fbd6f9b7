"""The local runtime's pool of containers per function (infra.local.functions.LocalFunction) and its
containers, one OS process each (infra.local.functions.ProcessContainer)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from infra.local.functions import ContainerDied, FunctionError, FunctionTimedOut, LocalFunction, ProcessContainer
from infra.template_model import FunctionSpec

SPEC = FunctionSpec(logical_id="Fn", code_uri="functions/x", handler="app.handler", timeout_s=30, memory_mb=128,
                    environment={}, routes=[])
#: A handler module of the tests (tests/support/probe_function.py) run in real container processes.
PROBE = FunctionSpec(logical_id="Probe", code_uri="tests/support", handler="probe_function.handler", timeout_s=2,
                     memory_mb=128, environment={}, routes=[])


class FakeContainer:
    def __init__(self, name: str) -> None:
        self.name = name
        self.stopped = False
        self.dead = False  # ended while idle
        self.crashes = False  # ends during its next invocation

    def invoke(self, event: dict[str, Any], request_id: str) -> Any:
        if self.crashes:
            raise ContainerDied(self.name)
        return self.name

    def alive(self) -> bool:
        return not self.dead

    def stop(self) -> None:
        self.stopped = True


def _function(max_containers: int, started: list[FakeContainer]) -> LocalFunction:
    def start(spec: FunctionSpec, env: Mapping[str, str], name: str) -> FakeContainer:
        started.append(FakeContainer(name))
        return started[-1]

    return LocalFunction(spec=SPEC, env={}, max_containers=max_containers, start_container=start)


def test_concurrent_requests_get_containers_of_their_own_up_to_the_cap_then_wait() -> None:
    # Given a function that may run 3 containers
    started: list[FakeContainer] = []
    function = _function(3, started)
    inside = threading.Barrier(3, timeout=10)
    release = threading.Event()
    seen: list[Any] = []

    def request() -> None:
        with function.container() as container:
            seen.append(container)
            inside.wait()  # the three requests are in their handlers at the same time
            release.wait(10)

    # When 3 requests arrive at once, Then they run at the same time in 3 different containers
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(request) for _ in range(3)]
        # a 4th request waits: the cap is reached and no container is idle
        fourth_started = threading.Event()

        def fourth() -> Any:
            with function.container() as container:
                fourth_started.set()
                return container

        late = pool.submit(fourth)
        assert not fourth_started.wait(0.5)
        release.set()
        for f in futures:
            f.result(timeout=10)
        reused = late.result(timeout=10)
    assert len({id(c) for c in seen}) == 3
    assert len(started) == 3 and len(function.containers) == 3  # each started on demand (a cold start)
    # and the 4th request got one of the released containers (no 4th cold start)
    assert any(reused is c for c in seen)


def test_a_container_whose_start_fails_frees_its_place_in_the_pool() -> None:
    # Given a function whose second container cannot start (an import error)
    calls: list[str] = []

    def start(spec: FunctionSpec, env: Mapping[str, str], name: str) -> FakeContainer:
        calls.append(name)
        if len(calls) == 2:
            raise FunctionError("Runtime.ImportModuleError")
        return FakeContainer(name)

    function = LocalFunction(spec=SPEC, env={}, max_containers=2, start_container=start)
    with function.container():
        # When a second request needs a new container, Then it fails with the import error
        with pytest.raises(FunctionError), function.container():
            raise AssertionError("a broken container must not be handed out")
        # and the place it took is free again: the next start succeeds
        with function.container() as second:
            assert second.invoke({}, "r") == "Fn-3"
    assert len(function.containers) == 2


def test_a_dead_container_is_dropped_and_replaced_by_the_next_cold_start() -> None:
    started: list[FakeContainer] = []
    function = _function(1, started)
    assert function.invoke({}, "r1") == "Fn-1"
    # Given its one container died while idle (killed), the next request gets a new one
    started[0].dead = True
    assert function.invoke({}, "r2") == "Fn-2"
    # and one that dies holding a request raises ContainerDied for it, then is replaced
    started[1].crashes = True
    with pytest.raises(ContainerDied):
        function.invoke({}, "r3")
    assert started[1].stopped and started[1] not in function.containers
    assert function.invoke({}, "r4") == "Fn-3"


def test_a_new_environment_replaces_every_container() -> None:
    started: list[FakeContainer] = []
    envs: list[dict[str, str]] = []

    def start(spec: FunctionSpec, env: Mapping[str, str], name: str) -> FakeContainer:
        envs.append(dict(env))
        started.append(FakeContainer(name))
        return started[-1]

    function = LocalFunction(spec=SPEC, env={"A": "1"}, max_containers=2, start_container=start)
    function.invoke({}, "r1")
    with function.container() as busy:
        assert isinstance(busy, FakeContainer)
        # When the environment changes while one container is busy (like UpdateFunctionConfiguration)
        function.set_environment({"A": "2"})
        assert not busy.stopped  # the invocation it holds goes on
    # Then it ends once released, and new invocations run in containers with the new variables
    assert busy.stopped and all(c.stopped for c in started)
    function.invoke({}, "r2")
    assert envs[-1] == {"A": "2"} and len(function.containers) == 1


# ------------------------------------------------------------------------- real container processes
def test_a_container_is_a_process_of_its_own_with_the_function_environment() -> None:
    container = ProcessContainer(PROBE, {"PROBE_VALUE": "from-the-template", "PATH": os.environ["PATH"]}, "Probe-1")
    try:
        # When it is invoked twice
        first = container.invoke({"do": "describe"}, "req-1")
        second = container.invoke({"do": "describe"}, "req-2")
    finally:
        container.stop()
    # Then it ran in another process, with exactly the environment it was given, kept its module
    # globals between invocations (a warm container) and saw each invocation's context
    assert first["pid"] != os.getpid() and first["pid"] == second["pid"]
    assert first["env"]["PROBE_VALUE"] == "from-the-template" and "ANTHROPIC_API_KEY" not in first["env"]
    assert (first["invocations"], second["invocations"]) == (1, 2)
    assert (first["request_id"], second["request_id"]) == ("req-1", "req-2")
    assert 0 < first["remaining_ms"] <= 2000  # counts down to the function's Timeout (2 s)
    assert first["sigint"] == "ignored"  # Ctrl-C is the stack's to handle
    assert not container.alive()


def test_errors_deaths_and_timeouts_of_a_container(capsys: pytest.CaptureFixture[str]) -> None:
    container = ProcessContainer(PROBE, {"PATH": os.environ["PATH"]}, "Probe-2")
    try:
        # A handler exception is the function's error; the container lives on
        with pytest.raises(FunctionError) as raised:
            container.invoke({"do": "raise"}, "r")
        assert raised.value.error_type == "ValueError" and container.alive()
        # what it printed arrived here, on the same streams
        assert container.invoke({"do": "print", "text": "日志行"}, "r") == "printed"
        out, err = capsys.readouterr()
        assert "日志行" in out and "ValueError" in err
        # Past the function's timeout (2 s) the container is stopped
        with pytest.raises(FunctionTimedOut):
            container.invoke({"do": "sleep", "seconds": 30}, "r")
        assert not container.alive()
    finally:
        container.stop()
    # A container that dies holding an invocation raises ContainerDied
    dying = ProcessContainer(PROBE, {"PATH": os.environ["PATH"]}, "Probe-3")
    with pytest.raises(ContainerDied) as died:
        dying.invoke({"do": "kill", "signal": int(signal.SIGKILL)}, "r")
    assert not isinstance(died.value, FunctionTimedOut)
    dying.stop()
