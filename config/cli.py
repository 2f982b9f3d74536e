"""`atrium`: Django's manage.py with Atrium's settings preset, so every management command is `atrium <cmd>`."""

from __future__ import annotations

import os
import sys

# Commands spelled with hyphens on the command line live in modules spelled with underscores.
ALIASES = {"mcp-config": "mcp_config", "backfill-embeddings": "backfill_embeddings", "backfill-slots": "backfill_slots"}


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    argv = list(sys.argv)
    if len(argv) > 1:
        argv[1] = ALIASES.get(argv[1], argv[1])
    argv[0] = "atrium"
    try:
        from django.core.management import execute_from_command_line
    except ImportError as exc:  # pragma: no cover
        raise SystemExit("Django is not installed: run `uv sync` first") from exc
    from ops.embedded import EmbeddedError

    try:
        execute_from_command_line(argv)
    except EmbeddedError as exc:
        sys.stderr.write(f"atrium: {exc}\n")
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
