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


def test_web_processes_get_the_concurrency_and_keep_alive_limits() -> None:
    from django.test import override_settings

    from ops.management.commands.up import uvicorn_argv

    with override_settings(ATRIUM_WEB_LIMIT_CONCURRENCY=37, ATRIUM_WEB_KEEP_ALIVE=3):
        argv = uvicorn_argv("127.0.0.1", 8123)
    assert argv[argv.index("--limit-concurrency") + 1] == "37"
    assert argv[argv.index("--timeout-keep-alive") + 1] == "3"
    assert argv[argv.index("--port") + 1] == "8123" and "config.asgi:application" in argv
    with override_settings(ATRIUM_WEB_LIMIT_CONCURRENCY=0):
        assert "--limit-concurrency" not in uvicorn_argv("127.0.0.1", 8123)  # 0: no limit


def test_uvicorn_takes_the_flags_up_passes() -> None:
    """The flags are uvicorn's own: its command line accepts them with these values (no server is started)."""
    import click
    from uvicorn.main import main as uvicorn_main

    from ops.management.commands.up import uvicorn_argv

    args = uvicorn_argv("127.0.0.1", 8123)[3:]
    context = uvicorn_main.make_context("uvicorn", args)
    assert context.params["limit_concurrency"] == 200 and context.params["timeout_keep_alive"] == 5
    with pytest.raises(click.UsageError):
        uvicorn_main.make_context("uvicorn", ["config.asgi:application", "--limit-concurrency", "many"])
