"""The MCP package's shape: a tool's write flag is declared once (the registry), tools/list filtering, the runner's
refusal and the annotations all read it there; no import cycle among api/mcp modules; no module over 600 lines."""

from __future__ import annotations

import ast
from pathlib import Path

from api.mcp.registry import TOOLS, write_tool_names
from api.mcp.server import WRITE_TOOLS, mcp

PACKAGE = Path(__file__).resolve().parents[3] / "api" / "mcp"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The api.mcp modules a module imports (lazy imports inside functions included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        found |= {name for name in names if name in modules}
    return found


def _graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    return {name: _imports(path, modules) - {name} for name, path in paths.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if state.get(other) == 1:
                return [*stack[stack.index(other) :], other]
            if other not in state and (found := visit(other)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_among_mcp_modules() -> None:
    graph = _graph()
    assert "api.mcp.runner" in graph and "api.mcp.tools.save" in graph  # the check reads the package
    assert _cycle(graph) is None, _cycle(graph)


def test_the_cycle_check_sees_a_cycle() -> None:
    """Control: a circle (the old base → context → server → tools → base) is found."""
    circle = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycle(circle) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_mcp_module_is_over_600_lines() -> None:
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert len(sizes) > 5
    assert {name: n for name, n in sizes.items() if n > 600} == {}


def test_write_flag_is_declared_once_and_read_from_the_registry() -> None:
    assert write_tool_names() == {
        "memory_save",
        "memory_update",
        "memory_forget",
        "memory_restore",
        "memory_report",
        "memory_distill",
        "memory_checkout",
        "memory_distill_undo",
        "memory_resolve",
        "memory_profile_edit",
        "memory_handoff_save",
        "memory_ingest_history",
    }
    assert write_tool_names() == WRITE_TOOLS
    listed = {tool.name: tool for tool in mcp._tool_manager.list_tools()}
    assert set(listed) == set(TOOLS) and len(TOOLS) == 28
    for name, spec in TOOLS.items():
        assert listed[name].annotations is not None
        assert listed[name].annotations.read_only_hint is (not (spec.write or spec.writes_in_a_mode)), name
    assert {name for name, spec in TOOLS.items() if spec.writes_in_a_mode} == {"memory_facts"}
