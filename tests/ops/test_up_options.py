"""`atrium up --web N` refuses a bad N, and a busy port among the N, before it starts anything (in process: the
real start is in tests/ops/test_scale_out.py)."""

from __future__ import annotations

import socket

import pytest
from django.core.management import CommandError, call_command


@pytest.mark.parametrize("web", ["0", "33"])
def test_web_count_outside_1_to_32_is_refused(web: str) -> None:
    with pytest.raises(CommandError, match="--web must be between 1 and 32"):
        call_command("up", "--web", web)


def test_a_busy_second_port_is_named() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        from ops.management.commands.up import port_free

        if not port_free("127.0.0.1", port - 1):
            pytest.skip("the port below the busy one is taken too")
        with pytest.raises(CommandError, match=f"port {port} on 127.0.0.1 is already in use"):
            call_command("up", "--host", "127.0.0.1", "--port", str(port - 1), "--web", "2")
