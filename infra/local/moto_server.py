"""The local stack's AWS: moto's server in a child process, one request at a time.

``python -m infra.local.moto_server -H HOST -p PORT`` serves moto's own WSGI application (the one
``python -m moto.server`` builds) and: answers one request at a time (:data:`REQUEST_LOCK`; moto's
FAQ: "Is Moto concurrency safe? No", and DynamoDB's conditional writes and transactions need each
request to see the writes before it whole); empties moto's instance lists after each request with
moto's own ``reset_model_data()`` (moto keeps every model object it creates, every item version,
for its dashboard); applies :mod:`infra.local.moto_patches`; with ``MOTO_DATA_DIR`` restores
DynamoDB from that directory and logs every write there before answering
(:mod:`infra.local.moto_persistence`; a directory it cannot use ends it with
:data:`EXIT_DATA_DIR_UNUSABLE` and the reason on stderr); with :data:`EXIT_WITH_STDIN_ENV` set to
``1``, ends when its standard input closes (its parent's end of the pipe, closed however the parent
ends), under :data:`REQUEST_LOCK`, so no write is half applied or half logged.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Held while moto handles one request (and while the process exits).
REQUEST_LOCK = threading.Lock()
#: Exit code when ``MOTO_DATA_DIR`` cannot be used (in use by another server, or a damaged log).
EXIT_DATA_DIR_UNUSABLE = 3
EXIT_WITH_STDIN_ENV = "MOTO_EXIT_WITH_STDIN"
_serving = threading.Event()  # set once the data is restored


class MotoServerError(RuntimeError):
    """moto's process did not start (the message says why)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class MotoServer:
    """This module's server as a child process, in a session of its own (a terminal's Ctrl-C must
    not stop it under the requests the stack drains); durable with ``data_dir``; ``url``, ``pid``."""

    def __init__(self, host: str, port: int, data_dir: Path | None = None) -> None:
        self.host, self.port, self.data_dir = host, port or free_port(host), data_dir
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the process and wait until it listens (up to 60 s).

        Raises:
            MotoServerError: it ended (the last line of its stderr says why) or did not listen.
        """
        python_path = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p)
        env = {**os.environ, "PYTHONPATH": python_path, EXIT_WITH_STDIN_ENV: "1"}
        env.pop("MOTO_DATA_DIR", None)
        if self.data_dir is not None:
            env["MOTO_DATA_DIR"] = str(self.data_dir)
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "infra.local.moto_server", "-H", self.host, "-p", str(self.port)], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._stderr, start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise MotoServerError(self._exit_reason())
            try:
                with socket.create_connection((self.host, self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise MotoServerError(f"moto server did not listen on {self.url} within 60 s")

    def _exit_reason(self) -> str:
        assert self._process is not None and self._stderr is not None
        code, self._process = self._process.returncode, None
        self._stderr.seek(0)
        lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        reason = lines[-1] if lines else f"port {self.port} taken?"
        return reason if code == EXIT_DATA_DIR_UNUSABLE else f"moto server exited with code {code} ({reason})"

    def stop(self) -> None:
        """Close its standard input (it exits under its request lock); kill it after 10 s."""
        if self._process is not None:
            assert self._process.stdin is not None
            with suppress(OSError):
                self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


# ------------------------------------------------------------------------------ the child process
class OneRequestAtATime:
    """WSGI: ``app`` handles one request at a time, then moto's instance lists are emptied (the body
    is read before the lock is taken: a slow client does not hold up the others)."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self._app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        import io

        from moto.core.model_instances import reset_model_data

        length = int(environ.get("CONTENT_LENGTH") or 0)
        stream = environ["wsgi.input"]
        body = stream.read() if environ.get("wsgi.input_terminated") else stream.read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        with REQUEST_LOCK:
            response = b"".join(self._app(environ, start_response))
            reset_model_data()
        return [response]


def _exit_when_stdin_closes() -> None:
    """Once standard input is closed, end the process: at once while the data is being restored (the
    compaction replaces the log atomically), else under :data:`REQUEST_LOCK`. ``os.read``, not
    ``sys.stdin``: a thread blocked in a buffered read would make an interpreter shutdown abort."""
    with suppress(OSError):
        while os.read(0, 65536):
            pass
    if not _serving.is_set():
        os._exit(0)
    with REQUEST_LOCK:
        os._exit(0)


def main(argv: list[str] | None = None) -> int:
    """The child process (module docstring); ``-H`` host, ``-p`` port."""
    import logging

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    from infra.local import moto_patches

    parser = argparse.ArgumentParser(prog="python -m infra.local.moto_server")
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args(argv)
    if os.environ.get(EXIT_WITH_STDIN_ENV) == "1":  # from the start: a parent killed while this restores
        threading.Thread(target=_exit_when_stdin_closes, name="exit-with-parent", daemon=True).start()
    moto_patches.apply()
    data_dir = os.environ.get("MOTO_DATA_DIR")
    if data_dir:
        from infra.local import moto_persistence

        try:
            moto_persistence.enable(Path(data_dir))
        except (moto_persistence.DataDirInUse, ValueError) as exc:
            print(str(exc).replace("\n", " "), file=sys.stderr, flush=True)
            return EXIT_DATA_DIR_UNUSABLE
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access log; warnings and errors stay
    os.environ.setdefault("MOTO_PORT", str(args.port))  # moto builds queue URLs from it
    app = OneRequestAtATime(DomainDispatcherApplication(create_backend_app))
    server = make_server(args.host, args.port, app, threaded=True, request_handler=MotoRequestHandler)
    _serving.set()
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
