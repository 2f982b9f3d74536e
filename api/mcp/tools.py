"""MCP tools: thin adapters over the memory services. The user always comes from the verified token."""

from __future__ import annotations
