"""The zero-cost estimate on the test transcripts: what would run, where it goes, what is skipped and why."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from capture.importers import BackfillRules, Estimate, Session, Turn, estimate, parse_path

TRANSCRIPTS = Path(__file__).resolve().parent.parent / "transcripts"
NOW = datetime(2025, 6, 13, 12, 0, tzinfo=UTC)
EN, ZH = "3f6c2a1e-5b7d-4c8e-9a0f-1d2e3c4b5a61", "8a2d4e6f-1c3b-4a5d-8e7f-0a1b2c3d4e52"
BOB, CODEX, CHAT = (
    "c4e8a2b6-9d1f-4e3a-b5c7-2f4e6a8c0d13",
    "0197a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
    "support-bot-2025-06-10-0007",
)


def sessions() -> list[Session]:
    return parse_path(TRANSCRIPTS)


def by_id(result: Estimate) -> dict[str, tuple[str | None, int, int]]:
    return {s.session.session_id: (s.skip_reason, len(s.kept), s.work_turns) for s in result.sessions}


def test_default_rules_skip_subagents_and_sessions_without_a_cwd() -> None:
    result = estimate(sessions(), BackfillRules(), now=NOW, use_git=False)

    assert by_id(result) == {
        EN: (None, 9, 9),
        f"{EN}/sidechain-1": ("sidechain", 0, 2),
        ZH: (None, 9, 9),
        BOB: (None, 6, 6),
        f"{BOB}/a7f3c91": ("sidechain", 0, 2),
        CODEX: (None, 4, 4),
        CHAT: ("no cwd", 0, 6),
    }
    assert result.skip_reasons == {"sidechain": 2, "no cwd": 1}
    assert (result.sessions_kept, result.sessions_skipped, result.turns_kept, result.turns_left_out) == (4, 3, 28, 10)
    # Only user and assistant turns are work: tool turns are never kept.
    main = next(s for s in result.sessions if s.session.session_id == EN)
    assert {main.session.turns[i].role for i in main.kept} == {"user", "assistant"}
    assert main.kept == (0, 1, 4, 5, 8, 9, 12, 13, 14)


def test_flags_let_subagents_and_cwd_less_sessions_in() -> None:
    rules = BackfillRules(include_sidechains=True, include_no_cwd=True)
    result = estimate(sessions(), rules, now=NOW, use_git=False)

    assert result.skip_reasons == {}
    assert result.turns_kept == 38
    chat = next(s for s in result.sessions if s.session.session_id == CHAT)
    assert (chat.origin, chat.how, chat.note) == (None, "personal", "the session does not say where it ran")


def test_window_counts_from_the_last_activity() -> None:
    morning = datetime(2025, 6, 13, 8, 30, 30, tzinfo=UTC)  # one day back is 2025-06-12 08:30:30
    one_day = estimate(sessions(), BackfillRules(window_days=1), now=morning, use_git=False)
    assert {k: v[0] for k, v in by_id(one_day).items() if v[0] != "sidechain"} == {
        EN: "older than window",  # last turn 2025-06-11 09:06
        ZH: "older than window",  # started and ended 2025-06-12 around 02:10
        CODEX: None,  # started 08:30:00 on the 12th, before the cut, but last active 08:31: in
        BOB: None,
        CHAT: "no cwd",
    }
    # 0 = no limit: even a year later everything with a cwd runs.
    unlimited = estimate(sessions(), BackfillRules(window_days=0), now=NOW + timedelta(days=365), use_git=False)
    assert unlimited.skip_reasons == {"sidechain": 2, "no cwd": 1}
    week_later = estimate(sessions(), BackfillRules(window_days=7), now=NOW + timedelta(days=365), use_git=False)
    assert week_later.skip_reasons == {"older than window": 4, "sidechain": 2, "no cwd": 1}


def test_turn_budgets_go_to_the_newest_sessions_first() -> None:
    result = estimate(sessions(), BackfillRules(turns_per_session=5, max_turns=12), now=NOW, use_git=False)

    # Newest first: bob (14:23 on the 12th), codex (08:31), zh (02:14), then en (the 11th).
    assert by_id(result)[BOB] == (None, 5, 6)
    assert by_id(result)[CODEX] == (None, 4, 4)
    assert by_id(result)[ZH] == (None, 3, 9)  # the budget ran out inside it: cut short
    assert by_id(result)[EN] == ("over total turn budget", 0, 9)
    assert result.turns_kept == 12
    assert result.skip_reasons == {"over total turn budget": 1, "sidechain": 2, "no cwd": 1}
    cut = {s.session.session_id: s.cut for s in result.sessions}
    assert (cut[BOB], cut[CODEX], cut[ZH], cut[EN]) == (True, False, True, False)
    zh = next(s for s in result.sessions if s.session.session_id == ZH)
    assert zh.kept == (0, 1, 3)  # its first work turns


def test_empty_and_timeless_sessions() -> None:
    at = NOW - timedelta(hours=1)
    tools_only = Session("t", "codex", "/w", False, at, at, [Turn(0, "tool", "", "shell", at)])
    timeless = Session("u", "openai", "/w", False, None, None, [Turn(0, "user", "I prefer tabs.")])
    result = estimate([tools_only, timeless], BackfillRules(), now=NOW, use_git=False)
    assert [s.skip_reason for s in result.sessions] == ["empty", "no timestamp"]

    no_window = estimate([tools_only, timeless], BackfillRules(window_days=0), now=NOW, use_git=False)
    assert [s.skip_reason for s in no_window.sessions] == ["empty", None]


def test_each_session_says_where_it_goes_and_how() -> None:
    rules = BackfillRules(mappings={"/home/alice/src/demo": "github.com/acme/demo"})
    result = estimate(sessions(), rules, now=NOW)  # git is read: these folders do not exist here

    places = {s.session.session_id: (s.origin, s.how) for s in result.sessions}
    assert places[EN] == places[ZH] == ("github.com/acme/demo", "map")
    assert places[BOB] == (None, "personal")
    notes = {s.session.session_id: s.note for s in result.sessions}
    assert notes[EN] == "mapped: /home/alice/src/demo=github.com/acme/demo"
    assert notes[BOB] == "/home/bob/work/infra: no git checkout with an origin here and no mapping"
