"""pytest bootstrap (loaded with `-p config.testing`, before Django starts).

Unless DATABASE_URL is set, the suite runs against an embedded PostgreSQL and Redis started once per session in a
temporary ATRIUM_HOME, so tests never touch ./var and need nothing installed on the machine.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("OMP_NUM_THREADS", "1")
# The fake OpenAI-compatible server (tests/fakes/openai_server.py) listens on loopback, which the egress rule refuses
# unless the operator's allow-list names it: the suite allows it the way an operator would, not by a weaker rule.
os.environ.setdefault("ATRIUM_LLM_ALLOWED_HOSTS", "127.0.0.1")
# The REST deadline (config/deadline.py) runs in every REST test, with room for a first request that loads the
# embedding model on a loaded CI machine; tests/ops/test_rest_deadline.py sets its own.
os.environ.setdefault("ATRIUM_REST_DEADLINE_SECONDS", "300")
# The suite's throwaway servers (its own, and those of the `atrium up` it starts) run as whoever runs it, root in a CI
# container too: allowed the way an operator would (ops/embedded.refuse_root; tests/ops/test_root.py unsets it).
os.environ.setdefault("ATRIUM_ALLOW_ROOT", "1")

if not os.environ.get("DATABASE_URL") or not os.environ.get("REDIS_URL"):
    _home = Path(tempfile.mkdtemp(prefix="atrium-test-"))
    os.environ["ATRIUM_HOME"] = str(_home)
    from ops.embedded import private_home

    private_home(_home)  # 0700, or 0711 as root: the embedded server's own system user passes through to pg/

    if not os.environ.get("REDIS_URL"):
        from ops.embedded import redis_url_for, start_redis

        _redis = start_redis(_home)
        os.environ["REDIS_URL"] = redis_url_for(_home / "redis.sock")
        os.environ["ATRIUM_EMBEDDED_REDIS"] = "1"

        def _stop_redis() -> None:
            if _redis is not None:
                _redis.terminate()
                _redis.wait(10)

        atexit.register(_stop_redis)

    if not os.environ.get("DATABASE_URL"):
        from ops.embedded import postgres_url

        os.environ["DATABASE_URL"] = postgres_url(_home, delete_on_exit=True)
        os.environ["ATRIUM_EMBEDDED_POSTGRES"] = "1"

    # atexit runs last-in first-out: this runs before the servers stop, so it removes only Redis's files; the
    # PostgreSQL data dir is deleted by embedded_postgres itself (delete_on_exit).
    atexit.register(shutil.rmtree, _home / "redis", ignore_errors=True)
