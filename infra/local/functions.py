"""Lambda functions on this machine: one OS process per execution environment, a pool per function.

As Lambda runs each execution environment ("container") as a process of its own that handles one
invocation at a time (docs/architecture.md, "Local runtime"):

- a container is forked from multiprocessing's fork server (which has imported :data:`PRELOADED`,
  none of which reads the function's environment at import), takes the function's environment,
  puts its ``CodeUri`` first on ``sys.path``, imports its ``Handler`` and answers invocations one at
  a time over a pipe, as Lambda's runtime API does: the event and the context's fields (request id,
  deadline in epoch ms like ``Lambda-Runtime-Deadline-Ms``) in, the JSON result or the error type
  out; its ``sys.stdout`` / ``sys.stderr`` come out of this process's, line by line, in order;
- a SnapStart function (the template's ``SnapStart``) runs its init once in a :class:`Snapshot`
  process and each container is forked from it (SnapStart's restore: the module as after init);
- a pool per function (:class:`LocalFunction`) of at most ``LOCAL_CONTAINERS_PER_FUNCTION``
  (default 8) containers, started on demand; one that ends holding an invocation (killed, out of
  memory) raises :class:`ContainerDied` (the gateway answers 502) and the next cold start replaces
  it; one past the function's ``Timeout`` is killed (:class:`FunctionTimedOut`), as Lambda does;
- containers ignore SIGINT (a terminal's Ctrl-C signals the whole process group: the stack lets
  them finish, then closes their pipes) and end when their pipe closes: also when this process
  ends, however it ends.

``LOCAL_CONTAINER_HOOK=module:function`` in a function's environment is called with the handler's
module after its import, inside the container (what ``AWS_LAMBDA_EXEC_WRAPPER`` is for in Lambda):
how tests replace a dependency of a function across the process boundary.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import io
import json
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from multiprocessing import forkserver, reduction
from multiprocessing.connection import Connection, wait
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from infra.local.events import LocalLambdaContext

if TYPE_CHECKING:
    from infra.template_model import FunctionSpec

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Most containers per function locally; ``LOCAL_CONTAINERS_PER_FUNCTION`` overrides it.
DEFAULT_CONTAINERS_PER_FUNCTION = 8
CONTAINER_HOOK_ENV = "LOCAL_CONTAINER_HOOK"
#: Imported once by the fork server: third-party libraries that read no environment variable at
#: import (not Powertools' event handler: ``agent_memory.http.powertools`` imports it its own way)
#: and the stack's modules (multiprocessing runs ``infra.local.server`` again in every child).
PRELOADED = ("infra.local.functions", "infra.local.stack", "infra.local.token", "boto3", "botocore.client", "pydantic",
             "pydantic.main", "pydantic.json_schema", "pynamodb.models", "aws_lambda_powertools", "aws_xray_sdk.core",
             "aws_lambda_powertools.utilities.idempotency", "aws_lambda_powertools.utilities.parser", "requests",
             "tenacity", "redcap", "zoneinfo")


class InvocationError(Exception):
    """An invocation that returned no result (the subclasses say why)."""


class FunctionError(InvocationError):
    """The function raised, or its module failed to import (Lambda's "Unhandled" function error);
    the message is the error type (the exception's class name, ``Runtime.ImportModuleError``)."""

    @property
    def error_type(self) -> str:
        return str(self.args[0])


class ContainerDied(InvocationError):
    """The container's process ended before it answered (killed, out of memory, ``os._exit``)."""


class FunctionTimedOut(ContainerDied):
    """No answer by the function's deadline: the container was killed, as Lambda stops it."""


class Container(Protocol):
    """What the pool needs of an execution environment (:class:`ProcessContainer`)."""

    name: str

    def invoke(self, event: dict[str, Any], request_id: str) -> Any: ...
    def alive(self) -> bool: ...
    def stop(self) -> None: ...


@functools.cache
def _context() -> Any:
    """multiprocessing's fork server (one per process), preloaded with :data:`PRELOADED`."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOADED))
    return context


def start_fork_server() -> None:
    """Start the fork server now (it imports :data:`PRELOADED` while the stack starts the rest)."""
    _context()
    forkserver.ensure_running()


def _next_message(conn: Connection, sentinels: list[Any], until: float, name: str) -> tuple[str, Any]:
    """The next (kind, payload) from a container's pipe other than its output, which is written to
    this process's streams as it comes. Raises TimeoutError (nothing by ``until``, epoch seconds) or
    ContainerDied (the pipe closed, or a process sentinel is ready)."""
    while True:
        if not wait([conn, *sentinels], timeout=max(0.0, until - time.time())):
            raise TimeoutError(name)
        try:
            if not conn.poll(0):  # only a sentinel: the process ended
                raise EOFError
            kind, payload = conn.recv()
        except (EOFError, OSError):
            raise ContainerDied(f"{name} ended") from None
        if kind != "output":
            return kind, payload
        stream, text = payload
        target = sys.stderr if stream == "stderr" else sys.stdout
        target.write(text)
        target.flush()


def _spawn(target: Callable[..., None], spec: FunctionSpec, env: Mapping[str, str],
           name: str) -> tuple[Connection, Any]:
    """``target`` (:func:`serve`, :func:`serve_snapshot`) in a new child: its pipe and its process."""
    conn, child = _context().Pipe()
    process = _context().Process(target=target, args=(child, spec.code_uri, spec.handler, dict(env)), name=name,
                                 daemon=True)
    process.start()
    child.close()
    return conn, process


class ProcessContainer:
    """One execution environment of ``spec``: a child process with ``env`` as its environment, or
    (``conn`` and ``restored_pid`` given) one a :class:`Snapshot` forked, answering on ``conn``.

    Raises:
        FunctionError: the handler's module failed to import. ContainerDied: the process ended.
    """

    def __init__(self, spec: FunctionSpec, env: Mapping[str, str], name: str, *,
                 conn: Connection | None = None, restored_pid: int | None = None) -> None:
        self.name, self._spec, self._process = name, spec, None
        if conn is None:
            conn, self._process = _spawn(serve, spec, env, name)
        self._conn = conn
        self.pid: int | None = restored_pid if self._process is None else self._process.pid
        if self._answer(time.time() + spec.timeout_s + 10)[0] == "init_error":
            self.stop()
            raise FunctionError("Runtime.ImportModuleError")

    def invoke(self, event: dict[str, Any], request_id: str) -> Any:
        """Run one invocation; its result (any JSON value).

        Raises:
            FunctionError: the handler raised. ContainerDied (FunctionTimedOut: past the deadline).
        """
        deadline = time.time() + self._spec.timeout_s
        fields = {"request_id": request_id, "deadline_ms": int(deadline * 1000), "function_name": self._spec.logical_id,
                  "timeout_s": self._spec.timeout_s, "memory_mb": self._spec.memory_mb}
        try:
            self._conn.send(("invoke", json.dumps(event), fields))
        except OSError:
            raise ContainerDied(f"{self.name} had ended") from None
        kind, payload = self._answer(deadline + 1.0)
        if kind == "error":
            raise FunctionError(payload)
        return json.loads(payload)

    def _answer(self, until: float) -> tuple[str, Any]:
        try:
            return _next_message(self._conn, [self._process.sentinel] if self._process else [], until, self.name)
        except TimeoutError:
            self._kill()
            self.stop()
            raise FunctionTimedOut(f"{self.name}: no answer within {self._spec.timeout_s} s") from None

    def alive(self) -> bool:
        if self._process is not None:
            return bool(self._process.is_alive())
        try:  # a restored container: its snapshot process reaps it at once
            os.kill(self.pid or 0, 0)
        except ProcessLookupError:
            return False
        with suppress(OSError, IndexError):  # unless the snapshot ended first: a zombie is gone too (Linux)
            return Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        return True

    def _kill(self) -> None:
        with suppress(ProcessLookupError):
            os.kill(self.pid or 0, signal.SIGKILL)

    def stop(self) -> None:
        """Write its output so far, close its pipe (it exits) and kill it if it has not ended 5 s later."""
        with suppress(OSError, ContainerDied, TimeoutError):
            while self._conn.poll(0):
                _next_message(self._conn, [], time.time(), self.name)
        self._conn.close()
        deadline = time.monotonic() + 5
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if self.alive():
            self._kill()


class Snapshot:
    """SnapStart's snapshot of a function: a process that ran the init phase (``env`` applied, the
    handler imported) and forks a container for each :meth:`restore` (errors: ProcessContainer's)."""

    def __init__(self, spec: FunctionSpec, env: Mapping[str, str], name: str) -> None:
        self._spec, self._lock = spec, threading.Lock()
        self._conn, self.process = _spawn(serve_snapshot, spec, env, name)
        if self._next(time.time() + spec.timeout_s + 10)[0] == "init_error":
            self.stop()
            raise FunctionError("Runtime.ImportModuleError")

    def _next(self, until: float) -> tuple[str, Any]:
        return _next_message(self._conn, [self.process.sentinel], until, self.process.name)

    def restore(self, env: Mapping[str, str], name: str) -> ProcessContainer:
        """A new container forked from the snapshot (``env``: the snapshot's, for the record)."""
        ours, theirs = _context().Pipe()
        with self._lock:
            self._conn.send(("restore", None))
            reduction.send_handle(self._conn, theirs.fileno(), self.process.pid)
            _, pid = self._next(time.time() + 30)
        theirs.close()
        return ProcessContainer(self._spec, env, name, conn=ours, restored_pid=pid)

    def stop(self) -> None:
        self._conn.close()  # it exits (its containers go on until their own pipes close)
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()


# ----------------------------------------------------------------------------- the container side
class _Channel:
    """A container's end of its pipe: one (kind, payload) message at a time, from any thread."""

    def __init__(self, conn: Connection) -> None:
        self.conn, self._lock = conn, threading.Lock()

    def send(self, kind: str, payload: Any) -> None:
        with self._lock:
            self.conn.send((kind, payload))


class _OutputRelay(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr`` of a container: complete lines go to the stack's process
    (``channel`` is replaced in a restored container: loggers made at init keep this object)."""

    def __init__(self, channel: _Channel, stream: str) -> None:
        self.channel, self._stream, self._pending = channel, stream, ""

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending:
            complete, _, self._pending = self._pending.rpartition("\n")
            self.channel.send("output", (self._stream, complete + "\n"))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            text, self._pending = self._pending, ""
            self.channel.send("output", (self._stream, text))


def _init(conn: Connection, code_uri: str, handler: str, env: dict[str, str]) -> Callable[..., Any] | None:
    """Lambda's init phase in this process: ``env``, the output relay, the handler imported (None:
    its import failed, reported to the stack as Lambda reports an init error)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the stack's: it drains, then closes the pipe
    os.environ.clear()
    os.environ.update(env)
    channel = _Channel(conn)
    sys.stdout, sys.stderr = _OutputRelay(channel, "stdout"), _OutputRelay(channel, "stderr")
    module_path, _, attribute = handler.rpartition(".")
    sys.path.insert(0, str(REPO_ROOT / code_uri))
    try:
        module = importlib.import_module(module_path)
        hook = os.environ.get(CONTAINER_HOOK_ENV)
        if hook:
            hook_module, _, hook_function = hook.partition(":")
            getattr(importlib.import_module(hook_module), hook_function)(module)
        function: Callable[..., Any] = getattr(module, attribute)
    except Exception:  # noqa: BLE001 - any import failure is Lambda's Runtime.ImportModuleError
        traceback.print_exc()
        sys.stderr.flush()
        channel.send("init_error", None)
        return None
    return function


def _serve(conn: Connection, function: Callable[..., Any]) -> None:
    """Answer invocations until the stack closes the pipe (Lambda's runtime loop)."""
    channel = _Channel(conn)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, _OutputRelay):
            stream.channel = channel
    channel.send("ready", None)
    while True:
        try:
            _, event, fields = conn.recv()
        except (EOFError, OSError):
            return  # the stack closed the pipe, or ended: Lambda's SHUTDOWN
        channel.send(*_invoke(function, event, fields))


def serve(conn: Connection, code_uri: str, handler: str, env: dict[str, str]) -> None:
    """A container's process: init, then invocations (module docstring)."""
    if (function := _init(conn, code_uri, handler, env)) is not None:
        _serve(conn, function)


def serve_snapshot(conn: Connection, code_uri: str, handler: str, env: dict[str, str]) -> None:
    """A SnapStart snapshot's process: init, then a forked container per ``restore`` request (the
    new container's pipe end arrives as a file descriptor; its pid is answered)."""
    if (function := _init(conn, code_uri, handler, env)) is None:
        return
    sys.stdout.flush()  # nothing of the init's output may be copied into the restored containers
    sys.stderr.flush()
    conn.send(("ready", None))
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # restored containers are reaped by the kernel
    while True:
        try:
            conn.recv()
            fd = reduction.recv_handle(conn)
        except (EOFError, OSError):
            return
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            conn.close()
            _serve(Connection(fd), function)
            os._exit(0)
        os.close(fd)
        conn.send(("restored", pid))


def _invoke(function: Callable[..., Any], event: str, fields: dict[str, Any]) -> tuple[str, Any]:
    """("result", the result as JSON) or ("error", the error type); a traceback goes to stderr, as
    Lambda's runtime logs it."""
    context = LocalLambdaContext(fields["function_name"], fields["timeout_s"], fields["memory_mb"],
                                 request_id=fields["request_id"], deadline_ms=fields["deadline_ms"])
    try:
        result = function(json.loads(event), context)
    except Exception as exc:  # noqa: BLE001 - an unhandled function error
        traceback.print_exc()
        return "error", type(exc).__name__
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    try:
        return "result", json.dumps(result)
    except (TypeError, ValueError):
        return "error", "Runtime.MarshalError"


def load_handler_module(spec: FunctionSpec, name: str) -> ModuleType:
    """``spec``'s handler file imported into the calling process as module ``name`` (to read what a
    handler declares, or to run it in one process: ``infra.jobs``). Raises what its import raises."""
    file = REPO_ROOT / spec.code_uri / (spec.handler.rpartition(".")[0].replace(".", "/") + ".py")
    module_spec = importlib.util.spec_from_file_location(name, file)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"{spec.logical_id}: cannot import {file}")
    module = sys.modules[name] = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


# ------------------------------------------------------------------------------------ the pool
@dataclass
class LocalFunction:
    """One Lambda function: its spec, its environment and a pool of containers. An invocation takes
    an idle container, or starts one (a cold start; restored from a :class:`Snapshot` with
    ``snap_start``) while there are fewer than ``max_containers``, or waits for one; a container
    found dead is dropped. :meth:`set_environment` replaces them all (UpdateFunctionConfiguration)."""

    spec: FunctionSpec
    env: dict[str, str]
    max_containers: int = DEFAULT_CONTAINERS_PER_FUNCTION
    snap_start: bool = False
    #: Starts a container: (spec, environment, name) -> container (default: :meth:`_start`).
    start_container: Callable[[FunctionSpec, Mapping[str, str], str], Container] | None = None
    containers: list[Container] = field(default_factory=list)
    _idle: list[Container] = field(default_factory=list)
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _starting: int = 0
    _started: int = 0
    _snapshot: Snapshot | None = None
    _snapshot_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def name(self) -> str:
        return self.spec.logical_id

    def invoke(self, event: dict[str, Any], request_id: str) -> Any:
        """Invoke the function once (errors: :meth:`ProcessContainer.invoke`)."""
        with self.container() as container:
            return container.invoke(event, request_id)

    @contextmanager
    def container(self) -> Iterator[Container]:
        """A container for one invocation: idle, newly started, or waited for."""
        chosen, died = self._take(), False
        try:
            yield chosen
        except ContainerDied:
            died = True
            raise
        finally:
            self._drop(chosen) if died else self._release(chosen)

    def _take(self) -> Container:
        with self._cond:
            while True:
                while self._idle and not self._idle[-1].alive():
                    self._drop_locked(self._idle.pop())
                if self._idle:
                    return self._idle.pop()
                if len(self.containers) + self._starting < self.max_containers:
                    break
                self._cond.wait()
            self._starting += 1
            self._started += 1
            name, env = f"{self.name}-{self._started}", dict(self.env)
        try:
            started = (self.start_container or self._start)(self.spec, env, name)
        finally:
            with self._cond:
                self._starting -= 1
                self._cond.notify_all()
        with self._cond:
            self.containers.append(started)
        return started

    def _start(self, spec: FunctionSpec, env: Mapping[str, str], name: str) -> Container:
        if not self.snap_start:
            return ProcessContainer(spec, env, name)
        with self._snapshot_lock:
            if self._snapshot is None or not self._snapshot.process.is_alive():  # none yet, or it was killed
                self._snapshot = Snapshot(spec, env, f"{name}-snapshot")
            snapshot = self._snapshot
        return snapshot.restore(env, name)

    def _release(self, container: Container) -> None:
        with self._cond:
            if kept := container in self.containers:
                self._idle.append(container)
            self._cond.notify()
        if not kept:  # replaced meanwhile (set_environment)
            container.stop()

    def _drop(self, container: Container) -> None:
        with self._cond:
            self._drop_locked(container)
        container.stop()

    def _drop_locked(self, container: Container) -> None:
        if container in self.containers:
            self.containers.remove(container)
        self._cond.notify_all()

    def set_environment(self, env: Mapping[str, str]) -> None:
        """Use ``env`` from now on: idle containers (and the snapshot) end now, busy ones when
        their invocation ends."""
        with self._cond:
            self.env, self.containers, idle, self._idle = dict(env), [], self._idle, []
            self._cond.notify_all()
        with self._snapshot_lock:
            snapshot, self._snapshot = self._snapshot, None
        for container in idle:
            container.stop()
        if snapshot is not None:
            snapshot.stop()

    def stop(self) -> None:
        """End every idle container and the snapshot (the stack calls it once no invocation runs)."""
        self.set_environment(self.env)
