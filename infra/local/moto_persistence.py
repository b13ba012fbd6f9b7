"""Durable local DynamoDB: moto's in-memory tables, kept on disk by an after-image log.

``enable(data_dir)`` makes the DynamoDB backend of this process durable:

* **Restore.** ``<data_dir>/dynamodb.jsonl`` is read first: table definitions, then the items,
  later records winning. A last line cut short by a crash is dropped (its write was never
  acknowledged: a write is acknowledged only once its line is complete).
* **Compact.** The restored state is written as a fresh log (tables, then items in chunks) to a
  temporary file, ``fsync``-ed and renamed over the old one (a crash meanwhile leaves the old log).
* **Log.** Every successful write appends one line with the *after-image* of the items it touched
  (the whole item, or ``null`` when deleted), in the order the writes were applied (the moto server
  answers one request at a time, :mod:`infra.local.moto_server`). A transaction is one line (all its
  items or none); a cancelled one writes nothing. The line is flushed to the operating system
  *before* moto answers, so what a client saw acknowledged survives ``kill -9``; it is not
  ``fsync``-ed per write (a power cut or an OS crash can lose the last writes).

The log is written by wrappers of ``DynamoDBBackend``'s write methods (:func:`_patch`). Covered: ``CreateTable``,
``DeleteTable``, ``UpdateTimeToLive``, ``PutItem``, ``UpdateItem``, ``DeleteItem``,
``BatchWriteItem`` (moto applies it through PutItem / DeleteItem), ``TransactWriteItems``; not
PartiQL writes, backups or table updates (the service uses none). Only DynamoDB is durable.

Why not moto's recorder (``MOTO_ENABLE_RECORDING``)? It appends every *request*, reads included,
before moto processed it, and replays them over HTTP one by one: restart time grows with the
requests ever made rather than with the data, and a replay can decide a race of conditional writes
differently than the run that acknowledged it (arrival order is not the order they were applied in).
"""

from __future__ import annotations

import fcntl
import functools
import inspect
import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from moto.dynamodb.models import DynamoDBBackend, dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType, Item

from infra.local import moto_patches

LOG_NAME = "dynamodb.jsonl"
#: Held (``flock``) by the one process that writes the directory; the OS releases it when the
#: process ends, however it ends.
LOCK_NAME = "lock"
#: Items per line in a compacted log.
_CHUNK = 500
_patched = False


class DataDirInUse(RuntimeError):
    """Another live process keeps its DynamoDB data in this directory (two writers would interleave)."""


class _Log:
    """The open log file (appended to by one request at a time)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file: IO[str] = path.open("a", encoding="utf-8")
        #: > 0 while a transaction runs (its single-item writes are logged as one line at the end).
        self.tx_depth = 0

    def append(self, record: dict[str, Any]) -> None:
        self.file.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n")
        self.file.flush()  # in the OS page cache before the request is acknowledged: survives kill -9


_log: _Log | None = None
_state_lock = threading.Lock()
#: ``create_table`` arguments of every live table, by (account, region, name): what a compaction writes.
_table_defs: dict[tuple[str, str, str], dict[str, Any]] = {}


# ------------------------------------------------------------------------------------ records
def _backend_id(backend: DynamoDBBackend) -> dict[str, str]:
    return {"a": backend.account_id, "r": backend.region_name}


def _after_image(backend: DynamoDBBackend, table_name: str, key: dict[str, Any]) -> list[Any]:
    """``[table, key, item attributes or None]`` for the item at ``key`` as it is now."""
    table = backend.get_table(table_name)
    hash_key, range_key = backend.get_keys_value(table, key)
    item = table.get_item(hash_key, range_key)
    key_only = {table.hash_key_attr: key[table.hash_key_attr]}
    if table.range_key_attr is not None:
        key_only[table.range_key_attr] = key[table.range_key_attr]
    return [table_name, key_only, item.to_json()["Attributes"] if item is not None else None]


def _key_of_put(backend: DynamoDBBackend, table_name: str, attrs: dict[str, Any]) -> dict[str, Any]:
    return moto_patches.op_key(backend, "Put", {"TableName": table_name, "Item": attrs})


# ------------------------------------------------------------------------------------ patches
def _bound(method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    return dict(inspect.signature(method).bind(*args, **kwargs).arguments)


def _logging_write(method: Callable[..., Any], key_of: Callable[[DynamoDBBackend, dict[str, Any]], Any]) -> Any:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        if _log is not None and _log.tx_depth == 0:
            backend = args[0]
            table_name, key = key_of(backend, _bound(method, args, kwargs))
            _log.append({"t": "w", **_backend_id(backend), "w": [_after_image(backend, table_name, key)]})
        return result

    return wrapper


def _logging_transaction(method: Callable[..., Any]) -> Any:
    @functools.wraps(method)
    def wrapper(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> Any:
        if _log is None:
            return method(self, transact_items)
        _log.tx_depth += 1
        try:
            result = method(self, transact_items)
        finally:
            _log.tx_depth -= 1
        ops = [next(iter(item.items())) for item in transact_items]
        writes = [_after_image(self, op["TableName"], moto_patches.op_key(self, op_type, op))
                  for op_type, op in ops if op_type in ("Put", "Update", "Delete")]
        if writes and _log.tx_depth == 0:
            _log.append({"t": "w", **_backend_id(self), "w": writes})
        return result

    return wrapper


def _logging_table_op(method: Callable[..., Any], kind: str) -> Any:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        if _log is not None:
            bound = _bound(method, args, kwargs)
            backend = bound.pop("self")
            record = {"t": kind, **_backend_id(backend), "args": bound}
            _remember(record)
            _log.append(record)
        return result

    return wrapper


def _patch() -> None:
    """Wrap ``DynamoDBBackend``'s write methods: moto has no write hook (getmoto/moto#9755 and #1069,
    state persistence for moto's server, were closed without one)."""
    global _patched
    if _patched:
        return
    moto_patches.apply()
    DynamoDBBackend.put_item = _logging_write(  # type: ignore[method-assign]  # moto's method wrapped in place
        DynamoDBBackend.put_item, lambda b, a: (a["table_name"], _key_of_put(b, a["table_name"], a["item_attrs"])))
    DynamoDBBackend.update_item = _logging_write(  # type: ignore[method-assign]  # moto's method wrapped in place
        DynamoDBBackend.update_item, lambda b, a: (a["table_name"], a["key"]))
    DynamoDBBackend.delete_item = _logging_write(  # type: ignore[method-assign]  # moto's method wrapped in place
        DynamoDBBackend.delete_item, lambda b, a: (a["table_name"], a["key"]))
    DynamoDBBackend.transact_write_items = _logging_transaction(  # type: ignore[method-assign]  # moto's method wrapped in place
        DynamoDBBackend.transact_write_items)
    DynamoDBBackend.create_table = _logging_table_op(  # type: ignore[method-assign]  # moto's method wrapped in place
        DynamoDBBackend.create_table, "create_table")
    DynamoDBBackend.delete_table = _logging_table_op(  # type: ignore[method-assign]  # moto's method wrapped in place
        DynamoDBBackend.delete_table, "delete_table")
    DynamoDBBackend.update_time_to_live = _logging_table_op(  # type: ignore[method-assign]  # moto's method wrapped in place
        DynamoDBBackend.update_time_to_live, "update_time_to_live")
    _patched = True


# ------------------------------------------------------------------------------------ restore
def _read(path: Path) -> tuple[list[dict[str, Any]], bool]:
    """The log's records; ``True`` when a last line cut short by a crash was dropped. Raises
    ValueError when a line other than the last one is not valid JSON (the log is damaged)."""
    if not path.is_file():
        return [], False
    lines = path.read_text(encoding="utf-8").split("\n")
    records: list[dict[str, Any]] = []
    dropped = False
    for number, line in enumerate(lines):
        if not line:
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if number == len(lines) - 1:  # the unterminated last line: a write that was never acknowledged
                dropped = True
                continue
            raise ValueError(f"{path}: line {number + 1} is damaged") from None
    return records, dropped


def _remember(record: dict[str, Any]) -> None:
    """Keep :data:`_table_defs` in step with a table record."""
    if record["t"] == "create_table":
        _table_defs[(record["a"], record["r"], record["args"]["name"])] = record["args"]
    elif record["t"] == "delete_table":
        _table_defs.pop((record["a"], record["r"], record["args"]["name"]), None)


def _replay(records: list[dict[str, Any]]) -> None:
    """Apply the log: tables in order; of each item only its last image (later records win)."""
    # (account, region, table) -> key -> (key, attributes or None)
    final: dict[tuple[str, str, str], dict[tuple[Any, ...], tuple[dict[str, Any], Any]]] = {}
    for record in records:
        _remember(record)
        backend = dynamodb_backends[record["a"]][record["r"]]
        kind = record["t"]
        if kind == "w":
            for table_name, key, attrs in record["w"]:
                images = final.setdefault((record["a"], record["r"], table_name), {})
                images[_key_id(key)] = (key, attrs)
        elif kind == "create_table":
            args = record["args"]
            final.pop((record["a"], record["r"], args["name"]), None)
            backend.tables.pop(args["name"], None)  # a table re-created after a delete
            DynamoDBBackend.create_table.__wrapped__(backend, **args)  # type: ignore[attr-defined]  # set by functools.wraps
        elif kind == "delete_table":
            final.pop((record["a"], record["r"], record["args"]["name"]), None)
            backend.tables.pop(record["args"]["name"], None)
        elif kind == "update_time_to_live":
            DynamoDBBackend.update_time_to_live.__wrapped__(backend, **record["args"])  # type: ignore[attr-defined]  # set by functools.wraps
    for (account_id, region, table_name), images in final.items():
        table = dynamodb_backends[account_id][region].get_table(table_name)
        for key, attrs in images.values():
            _restore_item(table, key, attrs)


def _key_id(key: dict[str, Any]) -> tuple[Any, ...]:
    """A hashable form of a DynamoDB JSON key (``{"pk": {"S": "a"}}`` -> ``(("pk", "S", "a"),)``)."""
    return tuple((name, *next(iter(value.items()))) for name, value in sorted(key.items()))


def _live_items(table: Any) -> Iterator[Any]:
    """Every item of a moto ``Table``, unsorted (``Table.all_items`` sorts, which a snapshot does not need)."""
    for entry in table.items.values():
        if table.range_key_attr is not None:
            yield from entry.values()
        else:
            yield entry


def _restore_item(table: Any, key: dict[str, Any], attrs: dict[str, Any] | None) -> None:
    """Put a logged image into a moto ``Table`` as acknowledged, directly (moto validated it when it
    was written; its ``LimitedSizeDict`` would re-measure the item for every attribute set)."""
    hash_key = DynamoType(key[table.hash_key_attr])
    range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr is not None else None
    if attrs is None:
        table.delete_item(hash_key, range_key)
        return
    item = Item(hash_key, range_key, {})
    dict.update(item.attrs, {name: DynamoType(value) for name, value in attrs.items()})
    if range_key is not None:
        table.items[hash_key][range_key] = item
    else:
        table.items[hash_key] = item


def _snapshot_records() -> Iterator[dict[str, Any]]:
    """The current state as log records: every table's definition and TTL, then its items."""
    for (account_id, region, name), args in list(_table_defs.items()):
        backend = dynamodb_backends[account_id][region]
        table = backend.tables.get(name)
        if table is None:
            continue
        ident = {"a": account_id, "r": region}
        yield {"t": "create_table", **ident, "args": args}
        if table.ttl.get("TimeToLiveStatus") == "ENABLED":
            spec = {"Enabled": True, "AttributeName": table.ttl["AttributeName"]}
            yield {"t": "update_time_to_live", **ident, "args": {"table_name": name, "ttl_spec": spec}}
        chunk: list[list[Any]] = []
        for item in _live_items(table):
            attrs = item.to_json()["Attributes"]
            chunk.append([name, _key_of_put(backend, name, attrs), attrs])
            if len(chunk) == _CHUNK:
                yield {"t": "w", **ident, "w": chunk}
                chunk = []
        if chunk:
            yield {"t": "w", **ident, "w": chunk}


def _compact(path: Path) -> None:
    tmp = path.with_suffix(".jsonl.tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for record in _snapshot_records():
            out.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def enable(data_dir: Path) -> None:
    """Restore this process's DynamoDB backend from ``data_dir`` and log every write there from now
    on. Call it once, before moto serves requests (tables already in memory are replaced).

    Raises:
        ValueError: the log is damaged somewhere other than its last line.
        DataDirInUse: another process holds the directory.
        RuntimeError: persistence is already enabled (on this or another directory).
    """
    global _log
    with _state_lock:
        if _log is not None:
            raise RuntimeError(f"DynamoDB persistence already writes to {_log.path}")
        _patch()
        data_dir.mkdir(parents=True, exist_ok=True)
        _take_lock(data_dir)
        path = data_dir / LOG_NAME
        _replay(_read(path)[0])
        _compact(path)
        _log = _Log(path)


def _take_lock(data_dir: Path) -> None:
    """Hold the directory's ``flock`` for this process's life (the OS releases it however it ends)."""
    fd = os.open(data_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DataDirInUse(f"{data_dir} is in use by another local server (stop it, or set LOCAL_DATA_DIR)") from None


class NotADataDir(ValueError):
    """The path given to :func:`reset` is not a directory the local server wrote: not a directory,
    or it holds anything besides the server's own files (:data:`DATA_DIR_FILES`)."""


#: Everything the local server keeps in its data directory: the log, its compaction's temporary
#: file and the lock. :func:`reset` deletes a directory only when it holds nothing else.
DATA_DIR_FILES = frozenset({LOG_NAME, LOG_NAME + ".tmp", LOCK_NAME})


def reset(data_dir: Path) -> bool:
    """Delete ``data_dir`` (every table of the local stack); True when deleted, False when absent.

    The directory's ``flock`` is taken first (without waiting): a running server, which holds it for
    its whole life, makes this fail instead of losing its data. Only the server's own files are
    deleted, then the empty directory (and a symbolic link to it): a mistyped ``LOCAL_DATA_DIR``
    naming a home or project folder is refused, never emptied.

    Raises:
        DataDirInUse: a local server holds ``data_dir``. NotADataDir: not a directory, or other files in it.
    """
    data_dir = Path(data_dir)
    if not data_dir.exists() and not data_dir.is_symlink():
        return False
    directory = data_dir.resolve()
    if not directory.is_dir():
        raise NotADataDir(f"{data_dir} is not a directory: nothing deleted")
    foreign = sorted(e.name for e in directory.iterdir() if e.name not in DATA_DIR_FILES or not e.is_file())
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise NotADataDir(
            f"{data_dir} holds files the local server did not write ({shown}): nothing deleted; "
            "point LOCAL_DATA_DIR at the server's data directory"
        )
    fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DataDirInUse(f"{data_dir} is in use by a running local server: stop it, then reset") from None
        for name in sorted(DATA_DIR_FILES - {LOCK_NAME}):
            (directory / name).unlink(missing_ok=True)
        (directory / LOCK_NAME).unlink(missing_ok=True)  # still held by fd: nobody can take it meanwhile
    finally:
        os.close(fd)
    directory.rmdir()  # fails (OSError) if a file appeared meanwhile: nothing of it is deleted
    if data_dir.is_symlink():
        data_dir.unlink()
    return True


def main(argv: list[str] | None = None) -> int:
    """``python -m infra.local.moto_persistence reset DIR`` (``make reset``): exit 0 when deleted or
    absent, 2 (with the reason on stderr) while a server uses ``DIR`` or when ``DIR`` is not a
    local server's data directory (:class:`NotADataDir`)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m infra.local.moto_persistence")
    parser.add_argument("command", choices=["reset"])
    parser.add_argument("data_dir", type=Path)
    args = parser.parse_args(argv)
    try:
        deleted = reset(args.data_dir)
    except (DataDirInUse, NotADataDir, OSError) as exc:
        print(f"make reset: {exc}", file=sys.stderr)
        return 2
    print(f"deleted {args.data_dir}" if deleted else f"nothing to delete: {args.data_dir} does not exist")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
