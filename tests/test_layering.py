"""The layering in DESIGN.md and the README, read from the import statements of each app (lazy imports inside
functions included), so the layout stays true:

    palace  <-  {accounts, memory}  <-  review  <-  ops  <-  {api, panel}  <-  config

A layer imports only the layers below it; accounts and memory are siblings, and so are api and panel; nothing
imports config. `ops` talks to a server over HTTP (`bench mcp`) and starts `config.asgi` by name (`up`), never by
import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BELOW: dict[str, set[str]] = {
    "palace": set(),
    "accounts": {"palace"},
    "memory": {"palace"},
    "review": {"palace", "accounts", "memory"},
    "ops": {"palace", "accounts", "memory", "review"},
    "api": {"palace", "accounts", "memory", "review", "ops"},
    "panel": {"palace", "accounts", "memory", "review", "ops"},
    "config": {"palace", "accounts", "memory", "review", "ops", "api", "panel"},
}


def imported_apps(path: Path) -> set[str]:
    """The apps a module imports (absolute imports; the project uses no relative ones)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {name.split(".")[0] for name in names} & set(BELOW)


def violations(app: str) -> list[str]:
    found = []
    for path in sorted((ROOT / app).rglob("*.py")):
        for other in sorted(imported_apps(path) - BELOW[app] - {app}):
            found.append(f"{path.relative_to(ROOT)} imports {other}")
    return found


@pytest.mark.parametrize("app", sorted(BELOW))
def test_each_app_imports_only_the_layers_below_it(app: str) -> None:
    assert (ROOT / app / "__init__.py").exists()
    assert violations(app) == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """Control: a module of a lower layer that imports a door (even lazily, inside a function) is caught."""
    module = tmp_path / "probe.py"
    module.write_text("def f():\n    from api.auth import A\n    import panel.health\n    from memory import m\n")
    assert imported_apps(module) == {"api", "panel", "memory"}
    assert imported_apps(module) - BELOW["ops"] == {"api", "panel"}


def test_no_product_module_is_over_600_lines() -> None:
    """A module that grows past this is doing several jobs; split it by what it holds (migrations excluded)."""
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for app in BELOW
        for path in (ROOT / app).rglob("*.py")
        if "migrations" not in path.parts
    }
    assert sizes, "no module found: the walk itself is broken"
    assert {name: n for name, n in sizes.items() if n > 600} == {}
