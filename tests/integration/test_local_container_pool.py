"""The local runtime's pool of handler containers per function (infra.local.stack.LocalFunction)."""

from __future__ import annotations

import threading
import types
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from infra.local.stack import Container, LocalFunction
from infra.template_model import FunctionSpec


def _function(max_containers: int, started: list[str]) -> LocalFunction:
    def start(name: str) -> Container:
        started.append(name)
        return Container(types.ModuleType(name), lambda event, context: name)

    spec = FunctionSpec(logical_id="Fn", code_uri="functions/x", handler="app.handler", timeout_s=30, memory_mb=128,
                        environment={}, routes=[])
    return LocalFunction(spec=spec, module=types.ModuleType("first"), handler=lambda e, c: "first",
                         max_containers=max_containers, start_container=start)


def test_concurrent_requests_get_containers_of_their_own_up_to_the_cap_then_wait() -> None:
    # Given a function that may run 3 containers
    started: list[str] = []
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
    assert len(started) == 2 and len(function.containers) == 3  # the first one existed already
    # and the 4th request got one of the released containers (no 4th cold start)
    assert any(reused is c for c in seen)


def test_a_container_whose_start_fails_frees_its_place_in_the_pool() -> None:
    # Given a function whose second container cannot start (an import error)
    spec = FunctionSpec(logical_id="Fn", code_uri="functions/x", handler="app.handler", timeout_s=30, memory_mb=128,
                        environment={}, routes=[])

    def broken(name: str) -> Container:
        raise ImportError("boom")

    function = LocalFunction(spec=spec, module=types.ModuleType("first"), handler=lambda e, c: "first",
                             max_containers=2, start_container=broken)
    with function.container():
        # When a second request needs a new container, Then it fails with the import error
        try:
            with function.container():
                raise AssertionError("a broken container must not be handed out")
        except ImportError:
            pass
    # and the pool still serves with its one working container
    with function.container() as container:
        assert container.handler({}, None) == "first"
