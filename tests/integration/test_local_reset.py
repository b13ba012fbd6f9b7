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


@pytest.mark.parametrize("stray", ["thesis.txt", "notes/"], ids=["a-file", "a-folder"])
def test_reset_refuses_a_directory_holding_anything_the_server_did_not_write(tmp_path: Path, stray: str) -> None:
    # Given a mistyped LOCAL_DATA_DIR: a folder with the server's files and someone's work in it
    data_dir = tmp_path / "home"
    log = _stored(data_dir)
    if stray.endswith("/"):
        (data_dir / stray).mkdir()
        (data_dir / stray / "draft.md").write_text("keep", encoding="utf-8")
    else:
        (data_dir / stray).write_text("keep", encoding="utf-8")

    # When reset is asked for (the command `make reset` runs)
    cli = subprocess.run([sys.executable, "-m", "infra.local.moto_persistence", "reset", str(data_dir)],
                         cwd=ROOT, capture_output=True, text=True, check=False)

    # Then it is refused with the reason, and nothing at all is deleted
    assert cli.returncode == 2
    assert "did not write" in cli.stderr and stray.rstrip("/") in cli.stderr
    assert log.exists() and (data_dir / stray.rstrip("/")).exists()
    with pytest.raises(moto_persistence.NotADataDir):
        moto_persistence.reset(data_dir)


def test_reset_refuses_a_file_and_follows_a_link_to_a_data_directory(tmp_path: Path) -> None:
    # Given a path to a file, and a symbolic link to a real data directory
    a_file = tmp_path / "dynamodb.jsonl"
    a_file.write_text("{}", encoding="utf-8")
    real = tmp_path / "real"
    _stored(real)
    link = tmp_path / "link"
    link.symlink_to(real)

    # When reset is asked for on each, Then the file is refused and kept
    with pytest.raises(moto_persistence.NotADataDir, match="not a directory"):
        moto_persistence.reset(a_file)
    assert a_file.exists()
    # and through the link, the data directory and the link are gone
    assert moto_persistence.reset(link) is True
    assert not real.exists() and not link.is_symlink()
