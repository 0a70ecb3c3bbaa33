"""The package's structure is tested like its numbers (docs/architecture.md says why):

* no import cycles between modules, counting imports inside functions (they hide cycles; they do not
  remove them) and not counting ``if TYPE_CHECKING:`` imports (never executed);
* the layers read from the folder names: a module imports only from its own layer or lower ones;
* among the analysis packages (alternatives, oracle, scoring, metrics, kws, ctc, decode) the package-level
  import graph is acyclic: siblings do not import each other both ways;
* no module is shadowed by a public name of its package (``import lattice_tools.x.y as m`` gives a module);
* every ``__all__`` is a literal list, so IDEs and type checkers see it.

The imports are read statically with ``ast``; nothing here imports the package.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "lattice_tools"

# Lowest layer first.  A module may import from its own layer and the ones before it.
LAYERS: list[tuple[str, set[str]]] = [
    ("core", {"core", "_ext"}),
    ("io", {"io", "interop"}),
    ("algorithms", {"algorithms"}),
    ("analysis", {"alternatives", "oracle", "scoring", "metrics", "kws", "ctc", "decode"}),
    ("pipelines", {"pipelines", "viewer"}),
    ("cli", {"cli", "__main__", "<top>"}),
]
LAYER_OF = {group: rank for rank, (_, groups) in enumerate(LAYERS) for group in groups}


def _modules() -> dict[str, tuple[Path, bool]]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        modules[".".join(parts)] = (path, is_package)
    return modules


MODULES = _modules()


def _is_type_checking_block(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The package modules an import statement loads (a name imported from a package that is itself a
    submodule counts as that submodule)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == "lattice_tools"]
    if node.level:
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[:len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    if base.split(".")[0] != "lattice_tools":
        return []
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]


def _import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: line of the first such import}."""
    graph: dict[str, dict[str, int]] = defaultdict(dict)
    for module, (path, is_package) in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        skipped = {id(n) for block in ast.walk(tree) if _is_type_checking_block(block) for n in ast.walk(block)}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or id(node) in skipped:
                continue
            for target in _targets(module, is_package, node):
                while target not in MODULES and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target != module:
                    graph[module].setdefault(target, node.lineno)
    return graph


GRAPH = _import_graph()


def _group(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<top>"


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
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
                    components.append(sorted(component))
    return components


def _where(a: str, b: str) -> str:
    return f"{MODULES[a][0].relative_to(PACKAGE.parent)}:{GRAPH[a][b]} imports {b}"


def test_the_import_graph_is_read():
    # a broken reader would make every test below pass vacuously
    assert len(MODULES) > 100
    assert "lattice_tools.core.lattice" in GRAPH["lattice_tools.algorithms.scores"]
    assert "lattice_tools.core.errors" in GRAPH["lattice_tools.core.lattice"]


def test_the_root_holds_only_the_entry_points():
    # every module lives in its layer's folder; the root is the public API and `python -m`
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert not loose, f"modules at the package root, outside any layer: {loose}"


def test_no_module_import_cycles():
    cycles = _cycles({module: set(targets) for module, targets in GRAPH.items()})
    details = []
    for component in cycles:
        members = set(component)
        details += [_where(a, b) for a in component for b in GRAPH[a] if b in members]
    assert not cycles, "import cycles:\n" + "\n".join(details)


def test_layers():
    for module in MODULES:
        assert _group(module) in LAYER_OF, f"{module}: add its folder to LAYERS in this test (and to the docs)"
    upward = [_where(module, target) for module, targets in GRAPH.items() for target in targets
              if LAYER_OF[_group(target)] > LAYER_OF[_group(module)]]
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_analysis_packages_do_not_import_each_other_both_ways():
    analysis = LAYERS[3][1]
    edges: dict[str, set[str]] = defaultdict(set)
    for module, targets in GRAPH.items():
        for target in targets:
            a, b = _group(module), _group(target)
            if a != b and a in analysis and b in analysis:
                edges[a].add(b)
    assert not _cycles(edges), f"package-level cycle among {sorted(analysis)}: {dict(edges)}"


def _literal_all(path: Path) -> list[str] | None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            value = node.value
            assert isinstance(value, (ast.List, ast.Tuple)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts), (
                f"{path}: __all__ must be a literal list of strings (IDEs and type checkers read it)")
            return [e.value for e in value.elts]
    return None


def _names_bound_in(path: Path) -> set[str]:
    """Names a package's ``__init__`` binds to objects: imports (except ``from . import submodule``),
    definitions, and the keys of top-level lazy-import tables (``{"name": "module", ...}``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and not (node.level == 1 and node.module is None):
            names |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            names |= {k.value for k, v in zip(node.value.keys, node.value.values, strict=True)
                      if isinstance(k, ast.Constant) and isinstance(v, ast.Constant) and isinstance(v.value, str)}
    return names


PACKAGES = sorted(m for m, (_, is_package) in MODULES.items() if is_package)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_submodule_is_shadowed_by_a_public_name(package):
    path, _ = MODULES[package]
    submodules = {m.rsplit(".", 1)[1] for m in MODULES if m.rsplit(".", 1)[0] == package and m != package}
    shadowed = sorted(_names_bound_in(path) & submodules)
    assert not shadowed, (f"{package}: names bound to something other than the submodule of the same name "
                          f"(`import {package}.X as m` would not give the module): {shadowed}")


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_a_literal_list(package):
    _literal_all(MODULES[package][0])


def test_the_shadowing_check_can_fail(tmp_path):
    """The check above sees a submodule's name bound by an import, a definition or a lazy-import table."""
    init = tmp_path / "__init__.py"
    init.write_text("from .sausages import sausages\n"
                    "def phrases():\n    pass\n"
                    "_LAZY = {'nbest': 'lattice_tools.alternatives.nbest_lists'}\n"
                    "from . import lattices\n")
    assert _names_bound_in(init) == {"sausages", "phrases", "nbest"}
