"""The README's spelling of a project, the bare key `github.com/org/repo` (issue 26, item 1), as an MCP tool's
`project`: a member gets the project, a non-member exactly the answer for a project that does not exist. (REST:
tests/api/test_bare_origin_doors.py; the normaliser's own cases: tests/palace/test_origins.py.)"""

from __future__ import annotations

from palace.models import Palace
from tests.api.mcp.conftest import call_each, run, text_of
from tests.fakes.memories import make_memory

BARE = "github.com/atrium-test/demo"  # the project fixture's origin (git@github.com:atrium-test/demo.git), bare
MISSING = "github.com/atrium-test/nothing"


def test_an_mcp_tool_takes_the_bare_origin(tokens: dict[str, str], project: Palace) -> None:
    make_memory(project, "Demo deploys from trunk every Tuesday.", placard="demo deploys")
    args = {"query": "when does the demo deploy"}
    [member] = run(call_each(tokens["alice"], [("memory_search", {**args, "project": BARE})]))
    assert not member.is_error, text_of(member)
    assert member.structured_content["palaceUsed"]["name"] == project.origin_key  # positive control
    outsider, missing = run(
        call_each(
            tokens["charlie"],
            [("memory_search", {**args, "project": BARE}), ("memory_search", {**args, "project": MISSING})],
        )
    )
    assert outsider.is_error and missing.is_error
    assert "Demo deploys" not in text_of(outsider)
    assert text_of(outsider).replace(BARE, MISSING) == text_of(missing)
