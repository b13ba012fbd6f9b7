"""The suite-wide proof that no local stack served a server error: every :class:`~infra.local.stack.
LocalStack` started while the tests run (in-process or as a ``make run`` subprocess) appends each
answer's status to the file named by ``LOCAL_STACK_STATUS_LOG`` (one file per pytest process: each
pytest-xdist worker has its own), and ``tests/conftest.py`` fails the run at its end when the file
holds a 5xx other than the documented 502 / 503 / 504 (LLM and storage faults, the gateway's
timeout).
"""

from __future__ import annotations

from pathlib import Path

#: 5xx statuses the API documents (LLM provider faults and overload, storage overload, timeouts).
DOCUMENTED_5XX = frozenset({502, 503, 504})


def undocumented_server_errors(path: str | Path) -> list[str]:
    """The lines of the status log ``path`` whose status is a 5xx outside :data:`DOCUMENTED_5XX`
    (a missing file: none)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    errors = []
    for line in lines:
        status, _, _ = line.partition(" ")
        if status.isdigit() and int(status) >= 500 and int(status) not in DOCUMENTED_5XX:
            errors.append(line)
    return errors
