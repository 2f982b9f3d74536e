"""The layering in DESIGN.md and the README, read from the import statements of each module (lazy imports inside
functions included), so the layout stays true:

    palace  <-  {accounts, memory}  <-  {review, capture}  <-  ops  <-  {api, panel}  <-  config

A layer imports only the layers below it; accounts and memory are siblings, and so are api and panel; nothing
imports config. `ops` talks to a server over HTTP (`bench mcp`) and starts `config.asgi` by name (`up`), never by
import. Inside `memory`, lowest first:

    text, models  ->  providers, selectors  ->  knowledge, judge  ->  save  ->  lifecycle  ->  jobs, search
    ->  context, audit  ->  admin

A package imports only packages on a lower step. Each package's `__init__` is its face: every module outside the
package (the other apps, memory's other packages, its tasks and commands) imports it through the face, and only
names the face lists in `__all__`. No two modules of one app import each other, directly or round a longer cycle.

In the tests, no module imports a test module (`test_*.py`): shared fixtures live in a conftest.py or a plugin it
names, shared helpers in tests/fakes/ or a kit module beside the tests that use them (tests/panel/browserkit.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BELOW: dict[str, set[str]] = {
    "palace": set(),
    "accounts": {"palace"},
    "memory": {"palace"},
    "review": {"palace", "accounts", "memory"},
    "capture": {"palace", "accounts", "memory"},
    "ops": {"palace", "accounts", "memory", "review", "capture"},
    "api": {"palace", "accounts", "memory", "review", "capture", "ops"},
    "panel": {"palace", "accounts", "memory", "review", "capture", "ops"},
    "config": {"palace", "accounts", "memory", "review", "capture", "ops", "api", "panel"},
}
# The steps inside memory, lowest first; a package imports only packages on a lower step.
MEMORY_STEPS: tuple[frozenset[str], ...] = (
    frozenset({"text", "models"}),
    frozenset({"providers", "selectors"}),
    frozenset({"knowledge", "judge"}),
    frozenset({"save"}),
    frozenset({"lifecycle"}),
    frozenset({"jobs", "search"}),
    frozenset({"context", "audit"}),
    frozenset({"admin"}),
)
STEP = {package: step for step, packages in enumerate(MEMORY_STEPS) for package in packages}
MAX_LINES = 600


@dataclass(frozen=True)
class Import:
    module: str  # the module named by the statement ("memory.search" in `from memory.search import x`)
    names: tuple[str, ...]  # the names taken from it (empty for a plain `import a.b`)
    line: int


_PARSED: dict[tuple[str, int, int], list[Import]] = {}


def imports_of(path: Path) -> list[Import]:
    """Every absolute import in a module, lazy ones inside functions included (the project uses no relative ones).
    Kept per file state, so a file changed since (a planted violation) is read again."""
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _PARSED:
        _PARSED[key] = _read_imports(path)
    return _PARSED[key]


def _read_imports(path: Path) -> list[Import]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [Import(alias.name, (), node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(Import(node.module, tuple(alias.name for alias in node.names), node.lineno))
    return found


def imported_apps(path: Path) -> set[str]:
    return {i.module.split(".")[0] for i in imports_of(path)} & set(BELOW)


def modules(root: Path, app: str) -> Iterator[Path]:
    for path in sorted((root / app).rglob("*.py")):
        if "migrations" not in path.parts:
            yield path


def name_of(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def file_of(root: Path, module: str) -> Path | None:
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def layer_violations(root: Path, app: str) -> list[str]:
    return [
        f"{path.relative_to(root)} imports {other}"
        for path in modules(root, app)
        for other in sorted(imported_apps(path) - BELOW[app] - {app})
    ]


def face_names(root: Path, package: str) -> set[str]:
    """The names a memory package's face lists in __all__."""
    init = root / "memory" / package / "__init__.py"
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            assert isinstance(node.value, ast.List | ast.Tuple)
            return {e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def memory_packages(root: Path) -> list[str]:
    return sorted(p.parent.name for p in (root / "memory").glob("*/__init__.py") if p.parent.name in STEP)


def package_of(root: Path, path: Path) -> str | None:
    """The memory package a module belongs to (None: not in one, e.g. memory/tasks.py or another app)."""
    parts = path.relative_to(root).parts
    return parts[1] if parts[0] == "memory" and len(parts) > 2 and parts[1] in STEP else None


def face_violations(root: Path) -> list[str]:
    """Imports of a memory package from outside it that go past its face: a module behind it, a name the face does
    not list, or a private name; and imports that climb the steps inside memory."""
    faces = {package: face_names(root, package) for package in memory_packages(root)}
    found = []
    for app in BELOW:
        for path in modules(root, app):
            mine = package_of(root, path)
            where = f"{path.relative_to(root)}"
            for i in imports_of(path):
                parts = i.module.split(".")
                if parts[0] != "memory" or len(parts) < 2 or parts[1] not in faces or parts[1] == mine:
                    continue
                package = parts[1]
                if mine is not None and STEP[package] >= STEP[mine]:
                    found.append(f"{where}:{i.line} ({mine}) imports memory.{package}, which is not on a lower step")
                if len(parts) > 2 or not i.names:
                    found.append(f"{where}:{i.line} imports {i.module}: behind the face of memory.{package}")
                    continue
                found += [
                    f"{where}:{i.line} takes {name} from memory.{package}, which its face does not list"
                    for name in i.names
                    if name.startswith("_") or name not in faces[package]
                ]
            found += _attributes_past_faces(path, faces, mine, where)
    return found


def _attributes_past_faces(path: Path, faces: dict[str, set[str]], mine: str | None, where: str) -> list[str]:
    """`from memory import search` binds the face itself: every `search.x` must be a name the face lists (and the
    package must be on a lower step than the importer's)."""
    tree = ast.parse(path.read_text())
    bound: dict[str, str] = {}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "memory" and node.level == 0:
            for alias in node.names:
                if alias.name in faces and alias.name != mine:
                    bound[alias.asname or alias.name] = alias.name
                    if mine is not None and STEP[alias.name] >= STEP[mine]:
                        found.append(f"{where}:{node.lineno} ({mine}) imports memory.{alias.name}, not on a lower step")
    found += [
        f"{where}:{node.lineno} uses {bound[node.value.id]}.{node.attr}, which the face does not list"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in bound
        and node.attr not in faces[bound[node.value.id]]
    ]
    return found


def module_graph(root: Path, app: str) -> dict[str, set[str]]:
    """Module -> the modules of the same app it imports. `from pkg import name` reaches the submodule when `name` is
    one, else the package's __init__ (which reaches what it imports in turn)."""
    graph: dict[str, set[str]] = {}
    for path in modules(root, app):
        me = name_of(root, path)
        targets = set()
        for i in imports_of(path):
            if i.module.split(".")[0] != app:
                continue
            for name in i.names or ("",):
                submodule = f"{i.module}.{name}" if name else i.module
                target = submodule if name and file_of(root, submodule) else i.module
                if file_of(root, target) is not None and target != me:
                    targets.add(target)
        graph[me] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


# Packages of the other apps that have a face too: modules outside each import only what its __init__ lists.
FACED = (
    "palace.oplog",
    "palace.admin",
    "capture.backfill",
    "capture.extraction",
    "capture.importers",
    "ops.bench",
    "ops.eval",
    "ops.portability",
    "api.mcp.schemas",
    "api.mcp.text",
)


def _all_of(init: Path) -> set[str]:
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            assert isinstance(node.value, ast.List | ast.Tuple)
            return {e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def other_face_violations(root: Path) -> list[str]:
    found = []
    for package in FACED:
        folder = root.joinpath(*package.split("."))
        listed = _all_of(folder / "__init__.py")
        for app in BELOW:
            for path in modules(root, app):
                if folder in path.parents:
                    continue
                for i in imports_of(path):
                    where = f"{path.relative_to(root)}:{i.line}"
                    if i.module.startswith(package + "."):
                        found.append(f"{where} imports {i.module}: behind the face of {package}")
                    elif i.module == package:
                        found += [f"{where} takes {n} from {package}, not listed" for n in i.names if n not in listed]
    return found


def shadowing(root: Path) -> list[str]:
    """Names a face imports that are also submodules of its package: `from pkg import sub` would then give the
    name, not the module (memory.admin's face imports its admin modules on purpose, to register them)."""
    found = []
    for package in memory_packages(root):
        folder = root / "memory" / package
        submodules = {p.stem for p in folder.glob("*.py")} - {"__init__"}
        for i in imports_of(folder / "__init__.py"):
            if i.module != f"memory.{package}":
                found += [f"memory.{package} exports {n}, also a module" for n in i.names if n in submodules]
    return found


def imports_of_test_modules(root: Path) -> list[str]:
    """Every import of a test module (`test_*.py`) by a module under tests/, relative imports too: importing one
    runs its tests again under another name, drags in its marks and fixtures, and ties two test files together."""
    found = []
    for path in sorted((root / "tests").rglob("*.py")):
        parts = name_of(root, path).split(".")
        package = parts if path.name == "__init__.py" else parts[:-1]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                above = package[: len(package) - node.level + 1] if node.level else []
                base = ".".join([*above, *([node.module] if node.module else [])])
                named = [base, *(f"{base}.{alias.name}" for alias in node.names)]  # `from pkg import test_x` too
            else:
                continue
            for module in named:
                target = file_of(root, module) if module.rpartition(".")[2].startswith("test_") else None
                if target is not None and target.name.startswith("test_"):
                    found.append(f"{path.relative_to(root)}:{node.lineno} imports the test module {module}")
    return found


@pytest.mark.parametrize("app", sorted(BELOW))
def test_each_app_imports_only_the_layers_below_it(app: str) -> None:
    assert (ROOT / app / "__init__.py").exists()
    assert layer_violations(ROOT, app) == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """Control: a module of a lower layer that imports a door (even lazily, inside a function) is caught."""
    module = tmp_path / "probe.py"
    module.write_text("def f():\n    from api.auth import A\n    import panel.health\n    from memory import m\n")
    assert imported_apps(module) == {"api", "panel", "memory"}
    assert imported_apps(module) - BELOW["ops"] == {"api", "panel"}


def test_every_memory_package_is_on_a_step_and_has_a_face() -> None:
    on_disk = {p.parent.name for p in (ROOT / "memory").glob("*/__init__.py")} - {"management", "migrations"}
    assert on_disk == set(STEP)
    assert all(face_names(ROOT, package) for package in STEP if package != "admin")


def test_memory_packages_are_used_through_their_faces_and_only_downward() -> None:
    assert face_violations(ROOT) == []


def test_the_other_apps_packages_are_used_through_their_faces() -> None:
    assert other_face_violations(ROOT) == []


def test_no_face_exports_a_name_that_is_one_of_its_modules() -> None:
    assert shadowing(ROOT) == []


@pytest.mark.parametrize("app", sorted(BELOW))
def test_no_import_cycle_between_the_modules_of_an_app(app: str) -> None:
    assert cycles(module_graph(ROOT, app)) == []


def _copy_of_the_project(tmp_path: Path) -> Path:
    """The product's modules (not the tests) in a scratch folder, to plant a violation in."""
    for app in BELOW:
        for path in modules(ROOT, app):
            target = tmp_path / path.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text())
    return tmp_path


def test_the_checks_see_a_planted_cycle_a_door_past_a_face_and_an_upward_step(tmp_path: Path) -> None:
    """Control: the same checks on a copy of the project with three violations planted in it; each is reported (and
    the untouched copy is clean, so it is the plant that is seen)."""
    copy = _copy_of_the_project(tmp_path)
    assert face_violations(copy) == [] and cycles(module_graph(copy, "memory")) == []
    assert other_face_violations(copy) == []

    # A cycle: the rank module (imported by search.py) imports search.py back, lazily.
    rank = copy / "memory" / "search" / "rank.py"
    rank.write_text(rank.read_text() + "\n\ndef _probe():\n    from memory.search.search import memory_search\n")
    # A door past a face: a REST router imports the module behind memory.search, a private name, and reaches a
    # module through the face.
    router = copy / "api" / "routers" / "search.py"
    planted = "\nfrom memory.search.arms import lexical_arm\nfrom memory.search import _x\nfrom memory import search\n"
    router.write_text(router.read_text() + planted + "search.arms.lexical_arm\n")
    # A step climbed: text (the lowest) imports save.
    cleaning = copy / "memory" / "text" / "cleaning.py"
    cleaning.write_text(cleaning.read_text() + "\nfrom memory.save import memory_save\n")

    found = cycles(module_graph(copy, "memory"))
    assert any({"memory.search.rank", "memory.search.search"} <= set(component) for component in found)
    reported = "\n".join(face_violations(copy))
    assert "api/routers/search.py" in reported and "memory.search.arms: behind the face" in reported
    assert "takes _x from memory.search" in reported and "uses search.arms" in reported
    assert "memory/text/cleaning.py" in reported and "(text) imports memory.save" in reported

    # And a door past one of the other apps' faces.
    export = copy / "api" / "routers" / "export.py"
    export.write_text(export.read_text() + "\nfrom ops.portability.links import link_token\n")
    assert any("ops.portability.links: behind the face" in v for v in other_face_violations(copy))


def test_no_test_module_imports_another() -> None:
    assert imports_of_test_modules(ROOT) == []


def test_the_check_sees_a_test_module_imported_by_another(tmp_path: Path) -> None:
    """Control: planted imports of a test module, absolute, from its package, relative and plain, are each reported;
    a helper module's names (even one called test_something) and a conftest are not."""
    files = {
        "tests/__init__.py": "",
        "tests/panel/__init__.py": "",
        "tests/panel/test_pages.py": "PASSWORD = 'x'\n",
        "tests/panel/kit.py": "def test_helper_named_like_a_test(): ...\n",
        "tests/panel/conftest.py": "X = 1\n",
        "tests/panel/test_flow.py": (
            "from tests.panel.kit import test_helper_named_like_a_test\n"
            "from tests.panel.conftest import X\n"
            "from tests.panel.test_pages import PASSWORD\n"
        ),
        "tests/panel/test_more.py": "from . import test_pages\nfrom .test_pages import PASSWORD\n",
        "tests/api/__init__.py": "",
        "tests/api/test_rest.py": "def f():\n    import tests.panel.test_pages\n",
        "tests/api/helpers.py": "from tests.panel import test_pages\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert imports_of_test_modules(tmp_path) == [
        "tests/api/helpers.py:1 imports the test module tests.panel.test_pages",
        "tests/api/test_rest.py:2 imports the test module tests.panel.test_pages",
        "tests/panel/test_flow.py:3 imports the test module tests.panel.test_pages",
        "tests/panel/test_more.py:1 imports the test module tests.panel.test_pages",
        "tests/panel/test_more.py:2 imports the test module tests.panel.test_pages",
    ]


def test_no_product_module_is_over_600_lines() -> None:
    """A module that grows past this is doing several jobs; split it into a package by what it holds (migrations
    excluded), never into a sibling with a suffix."""
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines()) for app in BELOW for path in modules(ROOT, app)
    }
    assert sizes, "no module found: the walk itself is broken"
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}
