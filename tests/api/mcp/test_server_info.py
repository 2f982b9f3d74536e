"""serverInfo: the server names itself and the installed distribution's version, in both protocol eras."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from tests.api.mcp.conftest import MODES, mcp_client, run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("mode", MODES)
def test_server_info_carries_the_installed_version(tokens: dict[str, str], mode: str) -> None:
    async def info() -> tuple[str, str]:
        async with mcp_client(tokens["alice"], mode) as client:
            assert client.server_info is not None
            return client.server_info.name, client.server_info.version

    name, ver = run(info())
    assert name == "atrium"
    installed = version("atrium")  # from the distribution's metadata, as the server reads it
    assert ver == installed and ver != ""
