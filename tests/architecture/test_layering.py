"""Layering rules of the package, read from the source with the standard library's ``ast``."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "stratamem"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (at any depth of the file)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_storage_imports_nothing_from_the_server() -> None:
    offenders = {
        _module_name(path): sorted(m for m in _imports(path) if m.startswith("stratamem.server"))
        for path in (SRC / "providers").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    assert len(offenders) > 5  # the providers were read


def _outside_providers() -> list[Path]:
    return [p for p in SRC.rglob("*.py") if (SRC / "providers") not in p.parents]


def test_no_feature_checks_for_a_concrete_provider_class() -> None:
    """Features check a contract (``providers/contracts.py``), never ``DuckDBProvider`` itself."""
    offenders = []
    for path in _outside_providers():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("isinstance", "issubclass"):
                classes = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
                if "DuckDBProvider" in classes or "PostgresProvider" in classes or "InMemoryProvider" in classes:
                    offenders.append(f"{_module_name(path)}:{node.lineno}")
    assert offenders == []


def _private_provider_members() -> set[str]:
    names: set[str] = set()
    for path in (SRC / "providers").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name.startswith("_") and not item.name.endswith("__"):
                        names.add(item.name)
    return names


def test_no_private_provider_member_is_used_outside_the_providers() -> None:
    private = _private_provider_members()
    assert {"_read", "_fetch_ids", "_select", "_entry"} <= private  # the scan sees the providers' classes
    offenders = []
    for path in _outside_providers():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in private:
                owner = ast.unparse(node.value)
                if owner.split(".")[-1] in ("provider", "_provider", "store_provider"):
                    offenders.append(f"{_module_name(path)}:{node.lineno} {owner}.{node.attr}")
    assert offenders == []
