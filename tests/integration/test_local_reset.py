"""`make reset` deletes the local stack's data, and refuses while a server holds the directory."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra.local import moto_persistence

ROOT = Path(__file__).resolve().parents[2]


def _stored(data_dir: Path) -> Path:
    data_dir.mkdir(parents=True)
    log = data_dir / moto_persistence.LOG_NAME
    log.write_text('{"table": "MemoryTable"}\n', encoding="utf-8")
    return log


def test_reset_refuses_while_a_server_holds_the_directory_and_deletes_once_it_stopped(tmp_path: Path) -> None:
    # Given stored data and a server holding the directory's lock (as `make run` does for its life)
    data_dir = tmp_path / "data"
    log = _stored(data_dir)
    server_fd = os.open(data_dir / moto_persistence.LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(server_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        # When reset is asked for, Then it is refused and nothing is deleted
        with pytest.raises(moto_persistence.DataDirInUse, match="running local server"):
            moto_persistence.reset(data_dir)
        assert log.read_text(encoding="utf-8") == '{"table": "MemoryTable"}\n'
        cli = subprocess.run([sys.executable, "-m", "infra.local.moto_persistence", "reset", str(data_dir)],
                             cwd=ROOT, capture_output=True, text=True, check=False)
        assert cli.returncode == 2 and "stop it, then reset" in cli.stderr
        assert log.exists()
    finally:
        os.close(server_fd)  # the server stopped
    # When reset again, Then the directory is gone; a second reset finds nothing to delete
    assert moto_persistence.reset(data_dir) is True
    assert not data_dir.exists()
    cli = subprocess.run([sys.executable, "-m", "infra.local.moto_persistence", "reset", str(data_dir)],
                         cwd=ROOT, capture_output=True, text=True, check=False)
    assert cli.returncode == 0 and "nothing to delete" in cli.stdout
