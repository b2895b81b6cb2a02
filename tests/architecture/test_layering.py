"""Layering rules of the package, read from the source with the standard library's ``ast``."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "stratamem"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (at any depth of the file): ``from pkg import
    name`` counts as ``pkg.name`` when that is a module of the package, else as ``pkg``."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    modules = _module_set(SRC)
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
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add(sub if sub in modules else module)
    return found


@functools.cache
def _module_set(src: Path) -> frozenset[str]:
    return frozenset(_module_name(p) for p in src.rglob("*.py"))


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


def test_no_private_attribute_of_a_provider_is_read_outside_the_providers() -> None:
    """Not only private methods: ``provider._lock``, ``getattr(provider, "_events")`` and the like are
    the provider's own business too (a feature uses a contract method instead)."""
    owners = ("provider", "_provider", "store_provider")
    offenders = []
    for path in _outside_providers():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.endswith("__"):
                owner = ast.unparse(node.value)
                if owner.split(".")[-1] in owners:
                    offenders.append(f"{_module_name(path)}:{node.lineno} {owner}.{node.attr}")
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "hasattr", "setattr"):
                args = node.args
                if (
                    len(args) > 1
                    and ast.unparse(args[0]).split(".")[-1] in owners
                    and isinstance(args[1], ast.Constant)
                    and str(args[1].value).startswith("_")
                ):
                    offenders.append(f"{_module_name(path)}:{node.lineno} {ast.unparse(node)}")
    assert offenders == []


def _all_modules() -> dict[str, Path]:
    return {_module_name(p): p for p in SRC.rglob("*.py")}


def _import_graph() -> dict[str, set[str]]:
    """Module -> stratamem modules it imports anywhere in the file: top level, inside functions and
    under ``if TYPE_CHECKING:`` (a type-only import is still a dependency). ``from pkg import name``
    points at ``pkg.name`` when that is a module, else at ``pkg``."""
    modules = _all_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        for target in _imports(path):
            while target not in modules and "." in target:
                target = target.rpartition(".")[0]
            if target in modules and target != name and target.startswith("stratamem"):
                edges.add(target)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles_in_src() -> None:
    graph = _import_graph()
    assert graph["stratamem.sdk"] >= {"stratamem.engine", "stratamem.assembly"}  # the graph was built
    assert _cycles(graph) == []


def test_the_engine_imports_no_feature() -> None:
    features = ("stratamem.graph", "stratamem.hygiene", "stratamem.lifecycle", "stratamem.persistence")
    imported = _import_graph()["stratamem.engine"]
    assert sorted(m for m in imported if m.startswith(features)) == []


#: Imports each module of the package first, in a fresh interpreter forked from one that has
#: imported only third-party libraries. Prints one line per module that fails: ``module<TAB>error``.
_IMPORT_EACH = r"""
import importlib, os, sys
from pathlib import Path

for lib in ("numpy", "pydantic", "duckdb", "typer", "rich", "httpx", "fastapi", "mcp.types"):
    try:
        importlib.import_module(lib)  # shared by the children: each then imports only stratamem
    except ImportError:
        pass
root = Path(sys.argv[1])
modules = sorted(
    ".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
    for p in root.rglob("*.py")
)
assert not any(name.startswith("stratamem") for name in sys.modules)


def child(name, out):
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("stratamem"):
            os._exit(0)  # an optional extra that is not installed, not a defect of the package
        os.write(out, f"{name}\t{type(exc).__name__}: {exc}".encode()[:500])
        os._exit(1)
    except BaseException as exc:
        os.write(out, f"{name}\t{type(exc).__name__}: {exc}".encode()[:500])
        os._exit(1)
    os._exit(0)


running = {}
for name in [m for m in modules if m != "stratamem.__main__"] + [None]:
    while running and (name is None or len(running) >= 2):
        pid, status = os.wait()
        read = running.pop(pid)
        if status:
            print(os.read(read, 600).decode() or "?", flush=True)
        os.close(read)
    if name is None:
        break
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        child(name, write)
    os.close(write)
    running[pid] = read
print("checked", len(modules))
"""


def test_every_module_imports_when_imported_first() -> None:
    """An import cycle through a package's ``__init__`` (``from ..providers.base import …`` runs
    ``providers/__init__.py`` first) breaks only the module a program happens to import first, which
    the static graph above does not see."""
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", _IMPORT_EACH, str(SRC)], capture_output=True, text=True, timeout=600, check=False
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert lines[-1] == f"checked {len(_all_modules())}"
    assert lines[:-1] == []
