"""No import cycles in situatedqa_server, counting imports inside functions too.

An import inside a function can hide a cycle from Python (it runs late) but not from this
check: every import statement of a module is an edge, wherever it stands.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def module_name(path: Path, root: Path) -> str:
    """The dotted module name of a source file under root."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, name: str) -> set[str]:
    """Every module a file imports (absolute names; `from . import x` counts as x)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def import_graph(package_dir: Path) -> nx.DiGraph:
    """Modules of a package and their imports of each other (a parent package aside: a
    submodule always loads its parent first, which is no cycle)."""
    root = package_dir.parent
    files = {module_name(p, root): p for p in package_dir.rglob("*.py")
             if "migrations" not in p.relative_to(package_dir).parts}
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for name, path in files.items():
        for target in imports_of(path, name):
            if target in files and target != name and not name.startswith(f"{target}."):
                graph.add_edge(name, target)
    return graph


def cycles(package_dir: Path) -> list[list[str]]:
    """The groups of modules that import each other, directly or through others."""
    return sorted(sorted(group) for group in nx.strongly_connected_components(
        import_graph(package_dir)) if len(group) > 1)


@pytest.mark.parametrize("package", ["situatedqa_server", "benchmark", "baselines"])
def test_no_import_cycles(package: str) -> None:
    """No package has a cycle, whether its imports are at the top or inside functions."""
    assert cycles(ROOT / package) == []


def test_a_cycle_hidden_in_a_function_is_found(tmp_path: Path) -> None:
    """The check sees an import inside a function (the usual way to hide a cycle)."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from .sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from .. import a\n    return a\n")
    (package / "c.py").write_text("from . import a\n")
    assert cycles(package) == [["pkg.a", "pkg.sub.b"]]


def test_the_evaluation_room_sits_under_jobs_uploads_and_baselines() -> None:
    """A walk from a job batch to its score rows goes down the floors: nothing the
    evaluation room imports, directly or through others, imports the jobs, the uploads, the
    baselines or the version catalog, which all call it."""
    graph = import_graph(ROOT / "situatedqa_server")
    room = "situatedqa_server.services.evaluation"
    below = nx.descendants(graph, room)
    callers = {f"situatedqa_server.services.{name}"
               for name in ("jobs", "scoring", "baselines", "versions")}
    assert not below & callers, below & callers
    assert all(room in nx.descendants(graph, caller) for caller in callers)
