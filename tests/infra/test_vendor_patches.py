"""The bar for vendor patches in the local runtime: :data:`PATCHES` registers each.

- Every assignment in ``infra/local`` to an attribute of moto or Powertools (``X.attr = ...``,
  ``setattr(X, "attr", ...)``, including through a loop over modules) must be registered, with the
  upstream issue it mirrors and what to re-check; a registered patch that is no longer made must
  be removed from the registry.
- A moto upgrade that changes the source of a patched original fails here, naming what to
  re-check before the pin (``source_sha256``) is updated.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

import moto

#: The moto version the pins below were taken from (``requirements-dev.txt`` pins the same).
MOTO_VERSION = "5.2.5"


@dataclass(frozen=True)
class VendorPatch:
    """One attribute of a vendor library the local runtime replaces: ``target``, its dotted path;
    ``module``, the ``infra.local`` module that assigns it; ``need``, ``durability``, ``bounded
    footprint`` or ``performance``; ``upstream``, the upstream issue or pull request it mirrors (or
    why none); ``recheck``, what to compare in a new original before updating ``source_sha256``
    (the SHA-256 of the original's source at :data:`MOTO_VERSION`; ``original``: where moto
    defines it, when not at ``target``)."""

    target: str
    module: str
    need: str
    upstream: str
    recheck: str
    source_sha256: str
    original: str = ""


_BACKEND = "moto.dynamodb.models.DynamoDBBackend"
_THIS, _PERSISTENCE = "infra.local.moto_patches", "infra.local.moto_persistence"
_PERSISTENCE_UPSTREAM = ("getmoto/moto#9755 (state persistence for moto server; closed without it) and #1069: "
                         "upstream-style, a write hook of the backend")
_WRITE = "the arguments the log reads by name (table_name, item_attrs, key) and that the call applies the write"
_TABLE_OP = "the keyword arguments: the log replays them into the original at restore"
_JSON = ("none found asking to undo the cost of getmoto/moto#9773 (requests parsed and responses serialized through "
         "botocore's model; boto/boto3#2928 is the same cost on the client): upstream-style, a JSON fast path")
_TRANSACT_SHA = "c3c395e9340064046eeb7cba599af6787b2adb77aa99bb485045679d7f307a0f"

PATCHES: tuple[VendorPatch, ...] = (
    VendorPatch(f"{_BACKEND}.transact_write_items", _THIS, "bounded footprint",
                "none found (getmoto/moto issues and PRs on transact_write_items, deepcopy, rollback): upstream-style, "
                "an undo log of the touched items instead of copy.deepcopy of each table",
                "moto's validations, their order and exceptions: port any change into transact_write_items",
                _TRANSACT_SHA),
    VendorPatch(f"{_BACKEND}.put_item", _PERSISTENCE, "durability", _PERSISTENCE_UPSTREAM, _WRITE,
                "7efe9807b019969a18d49c6b6f6cc00a422dac7b4702e292709f84d8e39b5894"),
    VendorPatch(f"{_BACKEND}.update_item", _PERSISTENCE, "durability", _PERSISTENCE_UPSTREAM, _WRITE,
                "d8e4e02a421005da93f32cde13e4afead7ddb8bb5f1e4ed8d1dcf0cc8195dfc1"),
    VendorPatch(f"{_BACKEND}.delete_item", _PERSISTENCE, "durability", _PERSISTENCE_UPSTREAM, _WRITE,
                "f1160c7db9568612553dee6728264c069e602b3b48db98ef024116bf28e6986a"),
    VendorPatch(f"{_BACKEND}.transact_write_items", _PERSISTENCE, "durability", _PERSISTENCE_UPSTREAM,
                "the operations' shape (one of Put, Update, Delete, ConditionCheck each, with TableName)",
                _TRANSACT_SHA),
    VendorPatch(f"{_BACKEND}.create_table", _PERSISTENCE, "durability", _PERSISTENCE_UPSTREAM, _TABLE_OP,
                "76afcbd436b6165a9da7a42bb9f0b9c5bfc89440ff709308fcb2c99b82de3300"),
    VendorPatch(f"{_BACKEND}.delete_table", _PERSISTENCE, "durability", _PERSISTENCE_UPSTREAM, _TABLE_OP,
                "0af92a17c39b68cabfe039b6dfd116297375e37e2bc03d564ab803570240b2ac"),
    VendorPatch(f"{_BACKEND}.update_time_to_live", _PERSISTENCE, "durability", _PERSISTENCE_UPSTREAM, _TABLE_OP,
                "82e6b9bd26b803a60bd162931eb58b114e02c69d5a2fe401855844255a1cecd0"),
    VendorPatch("moto.dynamodb.responses.DynamoResult.execute_result", _THIS, "performance", _JSON,
                "that an item operation's result is still its response document (the test compares both)",
                "ba49df8839c1c886e20d2ece8ccc888854c8e70f5d83d6b82ea07e18e384a455",
                "moto.core.responses.ActionResult.execute_result"),
    VendorPatch("moto.dynamodb.responses.DynamoHandler.parse_parameters", _THIS, "performance", _JSON,
                "that the parsed parameters of an item operation are still its JSON body (the test compares)",
                "3de0fd98e47a00483cad654b1a68d26cf1645fb75c4b10f061050125420a59f1",
                "moto.core.responses.BaseResponse.parse_parameters"),
    VendorPatch("moto.dynamodb.models.dynamo_type.Item.__init__", _THIS, "performance",
                "getmoto/moto#9670 skips the same O(n^2) size check when moto copies an item; none for building one: "
                "upstream-style, a bulk constructor of LimitedSizeDict",
                "the attributes Item sets and LimitedSizeDict's limit (ITEM_SIZE_LIMIT_BYTES)",
                "caee6822d9d9d5970c2d90505617f818bdc00c0d2b1e473aac0488027e96e872"),
    VendorPatch("moto.dynamodb.comparisons.ConditionExpressionParser.parse", _THIS, "performance",
                "none found (a memo of parsed condition expressions): upstream-style, an lru_cache inside the parser",
                "that the tree is still only evaluated, never changed, and the *_found lists its only other output",
                "3634b2bc002a08a9f85318cf2695425f89766c3d2ae62aa8c5790c32fce90058"),
)

REPO_ROOT = Path(__file__).resolve().parents[2]
LOCAL = REPO_ROOT / "infra" / "local"
#: Import roots whose attributes the local runtime must not replace unregistered.
VENDORS = ("moto", "aws_lambda_powertools", "agent_memory.http.powertools")


def _dotted(node: ast.expr, origins: dict[str, list[str]]) -> list[str]:
    """The vendor paths ``node`` may name (``[]``: none known)."""
    if isinstance(node, ast.Name):
        return origins.get(node.id, [])
    if isinstance(node, ast.Attribute):
        return [f"{base}.{node.attr}" for base in _dotted(node.value, origins)]
    return []


def _origins(tree: ast.Module) -> dict[str, list[str]]:
    """Local names -> the dotted paths they were imported from, assigned from, or loop over."""
    origins: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                origins[alias.asname or top] = [alias.name if alias.asname else top]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                origins[alias.asname or alias.name] = [f"{node.module}.{alias.name}"]
    for node in ast.walk(tree):  # aliases and loops, once the imports are known
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if _dotted(node.value, origins):
                origins[node.targets[0].id] = _dotted(node.value, origins)
        elif (isinstance(node, ast.For) and isinstance(node.target, ast.Name)
              and isinstance(node.iter, ast.Tuple | ast.List)):
            named = [path for element in node.iter.elts for path in _dotted(element, origins)]
            if named:
                origins[node.target.id] = named
    return origins


def vendor_assignments(path: Path) -> set[str]:
    """The vendor attributes the module at ``path`` assigns."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    origins = _origins(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute):
                found.update(_dotted(target, origins))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and node.args:
            name = node.args[1] if len(node.args) > 1 else None
            attribute = str(name.value) if isinstance(name, ast.Constant) else "<not a literal name>"
            found.update(f"{base}.{attribute}" for base in _dotted(node.args[0], origins))
    return {path for path in found if path.split(".")[0] in {v.split(".")[0] for v in VENDORS}
            and any(path == v or path.startswith(v + ".") for v in VENDORS)}


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)


def test_every_vendor_attribute_replaced_in_infra_local_is_registered() -> None:
    made = {(target, _module_name(path)) for path in sorted(LOCAL.rglob("*.py")) for target in vendor_assignments(path)}
    registered = {(patch.target, patch.module) for patch in PATCHES}
    assert made - registered == set(), "register each in PATCHES above (need, upstream reference, what to re-check)"
    assert registered - made == set(), "these registered patches are no longer made: remove them from PATCHES"


def test_the_scan_sees_direct_aliased_looped_and_setattr_patches(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from moto.dynamodb.models import DynamoDBBackend as B\nfrom moto.dynamodb import comparisons, models\n"
        "import aws_lambda_powertools.event_handler.api_gateway as gw\nX = B\n"
        "B.put_item = None\nX.get_item = None\nsetattr(B, 'scan', None)\nsetattr(B, name, None)\n"
        "for m in (comparisons, models):\n    m.get_filter_expression = None\ngw.BaseRouter.current_event = 1\n"
        "local = object()\nlocal.attr = 1\n", encoding="utf-8")
    backend = "moto.dynamodb.models.DynamoDBBackend"
    assert vendor_assignments(sample) == {
        f"{backend}.put_item", f"{backend}.get_item", f"{backend}.scan", f"{backend}.<not a literal name>",
        "moto.dynamodb.comparisons.get_filter_expression", "moto.dynamodb.models.get_filter_expression",
        "aws_lambda_powertools.event_handler.api_gateway.BaseRouter.current_event",
    }


def original_source(target: str) -> str:
    """The source of ``target`` as the installed vendor package ships it (read from its file, so
    a patch applied in this process does not hide it)."""
    parts = target.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            spec = importlib.util.find_spec(".".join(parts[:split]))
        except ModuleNotFoundError:  # a class or function inside a module, not a module
            continue
        if spec is not None and spec.origin:
            break
    else:
        raise AssertionError(f"no module for {target}")
    text = Path(spec.origin).read_text(encoding="utf-8")
    body: list[ast.stmt] = ast.parse(text).body
    node: ast.AST | None = None
    for name in parts[split:]:
        node = next((n for n in body if isinstance(n, ast.ClassDef | ast.FunctionDef) and n.name == name), None)
        assert node is not None, f"{target}: {name} is gone from {spec.origin}"
        body = getattr(node, "body", [])
    segment = ast.get_source_segment(text, node)  # type: ignore[arg-type]
    assert segment is not None
    return segment


def test_moto_is_the_version_the_patches_were_checked_against() -> None:
    pinned = re.search(r"^moto\[[^\]]*\]==(\S+)$", (REPO_ROOT / "requirements-dev.txt").read_text(), re.MULTILINE)
    assert pinned is not None and pinned.group(1) == MOTO_VERSION == moto.__version__


def test_no_patched_original_changed_since_the_pinned_moto() -> None:
    digests = {p: hashlib.sha256(original_source(p.original or p.target).encode()).hexdigest() for p in PATCHES}
    changed = [f"{p.target} ({p.need}; {p.module}): re-check {p.recheck}; then set its source_sha256 to {digest}"
               for p, digest in digests.items() if digest != p.source_sha256]
    assert changed == [], "moto changed what the local runtime patches:\n" + "\n".join(changed)
