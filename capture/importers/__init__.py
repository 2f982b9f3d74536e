"""Transcript importers for backfill: the session files agents leave on disk, read into plain sessions and turns,
and the zero-cost estimate of what a backfill with given rules would keep (pure Python: no models, no database, no
model calls).

Formats: Claude Code session JSONL (`~/.claude/projects/<escaped cwd>/<session id>.jsonl`, subagent files
included), Codex CLI rollout JSONL (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`, and the older bare-item JSONL
and JSON layouts), and an OpenAI-style `messages` JSON. Tool calls become `tool` turns that carry the tool's name and
no text; tool output is never kept.
"""

from __future__ import annotations

from capture.importers.claude_code import parse_claude_code
from capture.importers.codex import parse_codex
from capture.importers.estimate import Estimate, SessionEstimate, estimate
from capture.importers.files import parse_path, parse_upload
from capture.importers.openai import parse_openai_messages
from capture.importers.rules import BackfillRules, RulesError, git_origin, resolve_project
from capture.importers.transcript import Session, TranscriptError, Turn

__all__ = [
    "BackfillRules",
    "Estimate",
    "RulesError",
    "Session",
    "SessionEstimate",
    "TranscriptError",
    "Turn",
    "estimate",
    "git_origin",
    "parse_claude_code",
    "parse_codex",
    "parse_openai_messages",
    "parse_path",
    "parse_upload",
    "resolve_project",
]
