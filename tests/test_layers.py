"""The import graph runs one way: each module imports only from its own layer or those
before it, no modules import each other (directly or round a longer circle), and neither
``suite/`` nor ``reports/`` imports a task module (they reach tasks through the registry).
Reading the imports from the source, every ``import`` statement counts, including those
inside functions. ``python -m pytest tests/test_layers.py -q`` is the command that shows
it."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import execbench

PACKAGE = Path(execbench.__file__).parent
LAYERS = (
    ("execbench", "execbench.registry", "execbench.settings", "execbench.program",
     "execbench.values", "execbench.sandbox", "execbench.analysis", "execbench.jsonfiles",
     "execbench.spool", "execbench.executors", "execbench.safe_read", "execbench.text_safety",
     "execbench.plugins", "execbench.results", "execbench.kept", "execbench.json_types",
     "execbench.template_worker", "execbench.import_guard"),
    ("execbench.sources", "execbench.mutation"),
    ("execbench.harvest",),
    ("execbench.tasks",),
    ("execbench.harvest.native",),
    ("execbench.metrics", "execbench.models", "execbench.manifest", "execbench.suite",
     "execbench.rundir", "execbench.context_check", "execbench.runner", "execbench.rewards",
     "execbench.reward_server", "execbench.export", "execbench.program_writing"),
    ("execbench.reports",),
    ("execbench.api",),
    ("execbench.cli",),
)
REGISTRY = ("execbench.tasks", "execbench.tasks.base", "execbench.tasks.registry",
            "execbench.tasks.protocol", "execbench.tasks.asking",
            "execbench.tasks.roles")
"""What suite/ and reports/ may import from the tasks: the registry, the roles a task plays
and the records they exchange, how a question is posed (``protocol``, ``asking``: the one
way a prompt is made, which ``show`` and the page make again); and a family's typed
instance fields and summary (a module named ``payload`` or ``*_payload``), which its
report reads."""


def _layer(module: str) -> int:
    best = None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + ".") and prefix != "execbench":
                best = index
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS")
    return best


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ("execbench", *path.relative_to(PACKAGE).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


FACADE = PACKAGE / "__init__.py"
"""The package's root, whose module ``__getattr__`` hands out the Python API
(``execbench.build``...) on first use: the one import that goes up the layers, checked
apart (``test_the_package_root_reaches_only_the_api``)."""


def _facade(tree: ast.Module) -> ast.FunctionDef | None:
    return next((node for node in tree.body if isinstance(node, ast.FunctionDef)
                 and node.name == "__getattr__"), None)


def _imports(path: Path, modules: dict[str, Path], facade: bool = False) -> set[str]:
    """The execbench modules a file imports (``from execbench.x import y`` counts as the
    module ``execbench.x.y`` when that is a module, else as ``execbench.x``); in the
    package's root, those of its ``__getattr__`` only with ``facade``."""
    imported = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    root = _facade(tree) if path == FACADE else None
    if facade:
        tree = root or ast.Module(body=[], type_ignores=[])
    elif root is not None:
        tree.body.remove(root)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name for a in node.names if a.name.startswith("execbench"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("execbench"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                imported.add(full if full in modules else node.module)
    return imported


def test_every_import_goes_to_the_same_or_an_earlier_layer() -> None:
    modules = _modules()
    backwards = [f"{name} -> {target}" for name, path in modules.items()
                 for target in _imports(path, modules) if _layer(target) > _layer(name)]
    assert backwards == []


def test_the_package_root_reaches_only_the_api() -> None:
    assert _imports(FACADE, _modules(), facade=True) == {"execbench.api"}


def test_suite_and_reports_reach_tasks_only_through_the_registry() -> None:
    modules = _modules()
    for name, path in modules.items():
        if name == "execbench.suite" or name.startswith(("execbench.suite.", "execbench.reports")):
            tasks = {t for t in _imports(path, modules) if t.startswith("execbench.tasks")}
            payloads = {t for t in tasks if t.endswith(("_payload", ".payload"))}
            assert tasks - payloads <= set(REGISTRY), (name, tasks)


def test_reports_read_runs_without_the_generation_engine() -> None:
    modules = _modules()
    engine = [name for name, path in modules.items() if name.startswith("execbench.reports")
              and "execbench.runner" in _imports(path, modules)]
    assert engine == []


def test_the_layers_are_read_from_the_source() -> None:
    modules = _modules()
    assert {"execbench.suite", "execbench.sandbox.pool", "execbench.reports.leaderboard",
            "execbench.mutation.search"} <= set(modules)
    assert "execbench.sandbox.trace" in _imports(modules["execbench.sandbox.pool"], modules)


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        for target in graph.get(stack.pop(), ()):
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


def _circles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Each group of modules that reach one another through imports, sorted: a module
    in a group imports, at some remove, every other (itself, for a group of one)."""
    reach = {name: _reachable(graph, name) for name in graph}
    return sorted({tuple(sorted(other for other in reach[name] if name in reach[other]))
                   for name in graph if name in reach[name]})


def test_no_modules_import_each_other() -> None:
    """An import inside a function counts: it hides a circle from the interpreter until the
    function runs, not from a reader, who must still hold both modules to read either."""
    modules = _modules()
    graph = {name: _imports(path, modules) & modules.keys() for name, path in modules.items()}
    assert _circles(graph) == []


def test_a_circle_is_found_however_long() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}, "f": {"a"}}
    assert _circles(graph) == [("a", "b", "c"), ("e",)]


def test_values_need_only_the_standard_library() -> None:
    """The harvest child ships ``execbench.values`` into a project's own interpreter, where
    nothing else of execbench, nor its dependencies, is installed."""
    modules = _modules()
    outside = []
    for name, path in modules.items():
        if name == "execbench.values" or name.startswith("execbench.values."):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                named = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                outside += [f"{name} -> {target}" for target in named
                            if target.partition(".")[0] not in sys.stdlib_module_names
                            and not target.startswith("execbench.values")]
    assert outside == []
