"""Capture: what comes in without "remember this" — the turns of agents' sessions, stored once per (user, session,
turn) and extracted into episodes and low-confidence facts by the worker; and backfill runs over past transcripts.

models.py (sessions, turns, backfill runs), services.py (routing and storing the turns a client sends),
processing.py (the worker's extraction and saves, the session summary), tasks.py (the Celery doors), admin.py;
extraction/ (anti-echo, rules and model extraction, summaries: pure), importers/ (transcript formats: pure)."""
