"""The bar for vendor patches in the local runtime (``infra.local.moto_patches.PATCHES``).

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
from pathlib import Path

import moto

from infra.local.moto_patches import MOTO_VERSION, PATCHES

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
                origins[alias.asname or alias.name.split(".")[0]] = [alias.name if alias.asname else alias.name.split(".")[0]]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                origins[alias.asname or alias.name] = [f"{node.module}.{alias.name}"]
    for node in ast.walk(tree):  # aliases and loops, once the imports are known
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if _dotted(node.value, origins):
                origins[node.targets[0].id] = _dotted(node.value, origins)
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name) and isinstance(node.iter, ast.Tuple | ast.List):
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
            attribute = name.value if isinstance(name, ast.Constant) else "<not a literal name>"
            found.update(f"{base}.{attribute}" for base in _dotted(node.args[0], origins))
    return {path for path in found if path.split(".")[0] in {v.split(".")[0] for v in VENDORS}
            and any(path == v or path.startswith(v + ".") for v in VENDORS)}


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)


def test_every_vendor_attribute_replaced_in_infra_local_is_registered() -> None:
    made = {(target, _module_name(path)) for path in sorted(LOCAL.rglob("*.py")) for target in vendor_assignments(path)}
    registered = {(patch.target, patch.module) for patch in PATCHES}
    assert made - registered == set(), "register each in infra.local.moto_patches.PATCHES (upstream reference, need)"
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
        spec = importlib.util.find_spec(".".join(parts[:split]))
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
    changed = [
        f"{patch.target} ({patch.need}; {patch.module}): re-check {patch.recheck}; then set its source_sha256 to "
        f"{hashlib.sha256(original_source(patch.target).encode()).hexdigest()}"
        for patch in PATCHES
        if hashlib.sha256(original_source(patch.target).encode()).hexdigest() != patch.source_sha256
    ]
    assert changed == [], "moto changed what the local runtime patches:\n" + "\n".join(changed)
