"""Where an MCP request's time went, returned in a `Server-Timing` response header (W3C Server Timing).

config/asgi.py starts a `RequestTiming` when an MCP request reaches the application and adds the header when the
response starts, e.g. `Server-Timing: total;dur=104.210, wait;dur=0.004, auth;dur=0.912, service;dur=101.337`:

- `total`: from the request reaching the ASGI application to the start of the response, in milliseconds (uvicorn's
  HTTP parsing before it and the sending of the body after it are not included);
- `wait`: waiting for a free ORM thread (api/mcp/workers.py) — queueing, when more requests are in flight than
  ATRIUM_MCP_THREADS;
- `auth`: verifying the bearer token (a hop to the ORM thread and one indexed query);
- `service`: time inside the service call of the tool body (absent when no tool ran: tools/list, 401, errors
  before the call). `total − service` is what the protocol layer cost this request on the server.

The figures are the server's own clock, never client input, and say nothing about other requests or users.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass, field

HEADER = b"server-timing"


@dataclass
class RequestTiming:
    started: float = field(default_factory=time.perf_counter)
    wait_ms: float = 0.0
    auth_ms: float = 0.0
    service_ms: float = 0.0
    tool_calls: int = 0

    def header(self, now: float | None = None) -> bytes:
        total = ((now if now is not None else time.perf_counter()) - self.started) * 1000
        parts = [f"total;dur={total:.3f}", f"wait;dur={self.wait_ms:.3f}", f"auth;dur={self.auth_ms:.3f}"]
        if self.tool_calls:
            parts.append(f"service;dur={self.service_ms:.3f}")
        return ", ".join(parts).encode("ascii")


# The timing of the MCP request being served (set by config/asgi.py; tool handlers and the token verifier run in
# copies of the request's context and add to the same object).
current_timing: ContextVar[RequestTiming | None] = ContextVar("atrium_mcp_timing", default=None)
