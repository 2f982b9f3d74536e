"""`atrium bench`: MCP tool-call latency against a running server over HTTP (mcp.py), search, save and ingest speed
and vector recall at N memories in this database (search.py, over synthetic memories (synthetic.py) or the lines of
a file of real texts (corpus.py), bulk loaded (load.py), with measures.py and embedder.py), backfill throughput
against the embedder alone (ingest.py), and the ledgers' growth under a team's traffic (ledger.py)."""

from __future__ import annotations

from ops.bench.corpus import CorpusError
from ops.bench.ingest import run_ingest_bench, synthetic_sessions
from ops.bench.ledger import run_ledger_bench
from ops.bench.load import background_fill, background_remove
from ops.bench.mcp import LocalStack, local_server, local_stack, parse_server_timing, run_mcp_bench
from ops.bench.search import run_search_bench

__all__ = [
    "CorpusError",
    "LocalStack",
    "background_fill",
    "background_remove",
    "local_server",
    "local_stack",
    "parse_server_timing",
    "run_ingest_bench",
    "run_ledger_bench",
    "run_mcp_bench",
    "run_search_bench",
    "synthetic_sessions",
]
