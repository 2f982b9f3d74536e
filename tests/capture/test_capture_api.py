"""POST /api/v1/capture: who may send turns, what is stored (once per turn, scrubbed and redacted), where the turns go
and why, and what the worker's service then saves (called here in-process; tests/capture/test_capture_worker.py
runs a real worker)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from accounts.usersettings import user_settings_update
from capture.models import CaptureSession, CaptureTurn
from capture.processing import capture_session_process
from memory.models import Memory
from palace.actors import Actor
from palace.models import OpLog, Palace
from tests.conftest import PROJECT_ORIGIN

PREFERENCE = "From now on, always use tabs for indentation in the Go services."


def _memories(palace: Palace, session: str) -> list[Memory]:
    return list(Memory.objects.filter(palace=palace, source_session=session).order_by("id"))


def _process(key: str) -> Any:
    return capture_session_process(session_id=CaptureSession.objects.get(key=key).pk)


# --- who may send ------------------------------------------------------------------------------------------------


def test_a_read_token_is_refused_and_a_write_token_stores(
    alice: Any, capture_as: Callable[..., Any], turns: Any
) -> None:
    body = {"session": "s-scope", "turns": turns(PREFERENCE)}
    status, answer = capture_as(alice, scope="read").post(body)
    assert status == 403
    assert "write scope" in answer["error"]["message"]
    assert not CaptureSession.objects.filter(key="s-scope").exists()

    status, answer = capture_as(alice).post(body)  # the positive control
    assert status == 202, answer
    assert (answer["stored"], answer["duplicates"], answer["queued"]) == (1, 0, True)
    assert CaptureTurn.objects.filter(session__key="s-scope").count() == 1


def test_without_a_token_it_is_401(db: Any, turns: Any) -> None:
    from django.test import Client

    response = Client().post("/api/v1/capture", {"session": "s", "turns": turns("x")}, content_type="application/json")
    assert response.status_code == 401
    assert not CaptureSession.objects.exists()


# --- idempotency -------------------------------------------------------------------------------------------------


def test_a_resend_stores_each_turn_once_and_saves_its_memories_once(
    alice: Any, palace: Palace, capture_as: Callable[..., Any], turns: Any
) -> None:
    client = capture_as(alice)
    first = turns(
        "We decided to deploy the billing service on Thursdays only.", "Remember that staging uses port 8081."
    )
    status, answer = client.post({"session": "s-idem", "client": "claude-code", "turns": first})
    assert status == 202 and (answer["stored"], answer["duplicates"]) == (2, 0)
    status, answer = client.post({"session": "s-idem", "turns": first})  # the same turns again
    assert status == 202 and (answer["stored"], answer["duplicates"]) == (0, 2)
    processed = _process("s-idem")
    assert processed.done == 2
    saved = {m.pk for m in _memories(palace, "s-idem")}
    assert saved and {m.source_kind for m in _memories(palace, "s-idem")} == {"capture"}

    # The whole transcript again with a new turn at the end: only the new one is stored and extracted.
    again = [*first, *turns("I prefer squash merges for feature branches.", start=2)]
    status, answer = client.post({"session": "s-idem", "turns": again})
    assert (answer["stored"], answer["duplicates"], answer["pending"]) == (1, 2, 1)
    assert _process("s-idem").done == 1
    stored = CaptureTurn.objects.filter(session__key="s-idem").order_by("index")
    assert [(t.index, t.state) for t in stored] == [(0, "done"), (1, "done"), (2, "done")]
    after = _memories(palace, "s-idem")
    assert {m.pk for m in after} > saved  # the new turn's memories, and the earlier ones untouched
    assert sorted(m.source_turn for m in after if m.kind == "episode") == ["0", "1", "2"]  # one episode a turn
    assert OpLog.objects.filter(op="capture.turn", palace=palace).count() == 3


def test_a_repeated_index_in_one_request_is_stored_once(alice: Any, capture_as: Callable[..., Any]) -> None:
    body = {
        "session": "s-dup",
        "turns": [
            {"index": 0, "role": "user", "text": "first wins"},
            {"index": 0, "role": "user", "text": "second is a duplicate"},
        ],
    }
    status, answer = capture_as(alice).post(body)
    assert (status, answer["stored"], answer["duplicates"]) == (202, 1, 1)
    assert list(CaptureTurn.objects.filter(session__key="s-dup").values_list("text", flat=True)) == ["first wins"]


# --- what is stored ----------------------------------------------------------------------------------------------


def test_a_tool_turn_keeps_its_tool_name_only_and_secrets_are_redacted_at_rest(
    alice: Any, palace: Palace, capture_as: Callable[..., Any]
) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    body = {
        "session": "s-tool",
        "turns": [
            {"index": 0, "role": "user", "text": f"Use the token {secret} for the deploy bot from now on."},
            {"index": 1, "role": "tool", "tool": "Bash", "text": "total 48\ndrwxr-xr-x  secret-output-line"},
        ],
    }
    status, answer = capture_as(alice).post(body)
    assert status == 202 and answer["stored"] == 2
    assert answer["redactions"]  # the answer says a secret was scrubbed (by kind, never the value)
    user_turn, tool_turn = CaptureTurn.objects.filter(session__key="s-tool").order_by("index")
    assert secret not in user_turn.text and "[REDACTED:" in user_turn.text
    assert user_turn.redactions
    assert (tool_turn.tool, tool_turn.text) == ("Bash", "")
    processed = _process("s-tool")
    assert (processed.done, processed.skipped) == (1, 1)
    tool_turn.refresh_from_db()
    assert tool_turn.state == "skipped" and "never stored" in tool_turn.fallback_reason
    contents = " ".join(m.content for m in _memories(palace, "s-tool"))
    assert secret not in contents and "secret-output-line" not in contents
    assert contents  # the positive control: the user turn was saved


def test_mode_off_stores_nothing_and_says_so(alice: Any, capture_as: Callable[..., Any], turns: Any) -> None:
    client = capture_as(alice)
    status, answer = client.post({"session": "s-off", "mode": "off", "turns": turns(PREFERENCE)})
    assert status == 200
    assert (answer["stored"], answer["queued"], answer["mode"], answer["palace"]) == (0, False, "off", None)
    assert "nothing" in answer["note"]
    assert not CaptureSession.objects.filter(key="s-off").exists()
    status, answer = client.post({"session": "s-off", "mode": None, "turns": turns(PREFERENCE)})  # the control
    assert (status, answer["stored"], answer["mode"], answer["mode_source"]) == (202, 1, "light", "setting")


def test_a_null_mode_follows_each_users_setting(
    alice: Any, bob: Any, palace: Palace, capture_as: Callable[..., Any], token_for: Any
) -> None:
    from django.test import Client

    # alice chooses eager over REST (the same door a client would use); bob keeps the default.
    rest = Client(headers={"Authorization": f"Bearer {token_for(alice)}"})
    changed = rest.put("/api/v1/settings", {"capture_mode": "eager"}, content_type="application/json")
    assert changed.status_code == 200 and changed.json()["capture_mode"] == "eager"
    said = "We decided the release branch is cut every second Tuesday."
    answers = {}
    for user in (alice, bob):
        body = {
            "session": f"s-{user.username}",
            "mode": None,
            "turns": [{"index": 0, "role": "assistant", "text": said}],
        }
        status, answers[user.username] = capture_as(user).post(body)
        assert status == 202
        _process(f"s-{user.username}")

    assert (answers["alice"]["mode"], answers["alice"]["mode_source"]) == ("eager", "setting")
    assert (answers["bob"]["mode"], answers["bob"]["mode_source"]) == ("light", "setting")
    assert CaptureSession.objects.get(key="s-alice").mode == "eager"
    assert CaptureTurn.objects.get(session__key="s-alice").state == "done"  # the assistant turn was kept
    assert _memories(palace, "s-alice")
    assert CaptureTurn.objects.get(session__key="s-bob").state == "skipped"  # light: user turns only
    bobs = Palace.objects.get(personal_owner=bob)
    assert not _memories(bobs, "s-bob")
    # A mode the request names wins over the setting, and says so.
    body = {"session": "s-asked", "mode": "light", "turns": [{"index": 0, "role": "assistant", "text": said}]}
    status, asked = capture_as(alice).post(body)
    assert (status, asked["mode"], asked["mode_source"]) == (202, "light", "request")


def test_a_user_whose_setting_is_off_gets_nothing_stored_on_a_null_mode(
    alice: Any, capture_as: Callable[..., Any], turns: Any
) -> None:
    client = capture_as(alice)
    status_off, told_off = client.post({"session": "s-told-off", "mode": "off", "turns": turns(PREFERENCE)})
    user_settings_update(user=alice, capture_mode="off", actor=Actor.for_user(alice))

    status_null, by_setting = client.post({"session": "s-set-off", "mode": None, "turns": turns(PREFERENCE)})

    assert status_off == 200 and told_off["mode_source"] == "request"
    assert (status_null, by_setting["stored"], by_setting["queued"], by_setting["palace"]) == (200, 0, False, None)
    assert (by_setting["mode"], by_setting["mode_source"]) == ("off", "setting")
    assert {k: v for k, v in by_setting.items() if k not in ("session", "mode_source")} == {
        k: v for k, v in told_off.items() if k not in ("session", "mode_source")
    }  # the same answer as mode off sent by the client
    assert not CaptureSession.objects.filter(user=alice).exists() and not CaptureTurn.objects.exists()
    # The control: the request's mode still wins over an off setting.
    status, asked = client.post({"session": "s-set-off", "mode": "light", "turns": turns(PREFERENCE)})
    assert (status, asked["stored"], asked["mode_source"]) == (202, 1, "request")


def test_light_mode_skips_assistant_turns_and_eager_keeps_them(
    alice: Any, palace: Palace, capture_as: Callable[..., Any]
) -> None:
    said = "We decided the release branch is cut every second Tuesday."
    for mode in ("light", "eager"):
        body = {"session": f"s-{mode}", "mode": mode, "turns": [{"index": 0, "role": "assistant", "text": said}]}
        assert capture_as(alice).post(body)[0] == 202
        _process(f"s-{mode}")
    light = CaptureTurn.objects.get(session__key="s-light")
    eager = CaptureTurn.objects.get(session__key="s-eager")
    assert (light.state, eager.state) == ("skipped", "done")
    assert not _memories(palace, "s-light") and _memories(palace, "s-eager")


# --- routing -----------------------------------------------------------------------------------------------------


def test_turns_go_to_the_project_for_its_editors_and_to_the_personal_palace_for_others(
    alice: Any, bob: Any, charlie: Any, project: Palace, capture_as: Callable[..., Any], turns: Any
) -> None:
    bare = "github.com/atrium-test/demo"  # the key itself, another spelling of PROJECT_ORIGIN: one project
    body = {"session": "s-route", "origin": bare, "turns": turns(PREFERENCE)}
    status, answer = capture_as(alice).post(body)
    assert status == 202
    assert (answer["palace"]["id"], answer["palace"]["chosen"]) == (project.pk, "project")
    assert "owner of github.com/atrium-test/demo" in answer["palace"]["why"]

    for user, why in [(charlie, "not a member of"), (bob, "a viewer of")]:  # bob is a viewer
        status, answer = capture_as(user).post(body)
        personal = Palace.objects.get(personal_owner=user)
        assert (answer["palace"]["id"], answer["palace"]["chosen"]) == (personal.pk, "personal")
        assert why in answer["palace"]["why"] and "github.com/atrium-test/demo" in answer["palace"]["why"]
        assert CaptureSession.objects.get(user=user, key="s-route").palace == personal

    nowhere = {**body, "session": "s-nowhere", "origin": "https://github.com/atrium-test/never-created"}
    status, answer = capture_as(alice).post(nowhere)
    assert answer["palace"]["chosen"] == "personal" and "not a member of" in answer["palace"]["why"]
    assert not Palace.objects.filter(origin_key="github.com/atrium-test/never-created").exists()  # never created


def test_an_editor_captures_into_the_project(
    bob_editor: Any, project: Palace, capture_as: Callable[..., Any], turns: Any
) -> None:
    for origin in (PROJECT_ORIGIN, "https://github.com/atrium-test/demo"):
        body = {"session": "s-ed", "origin": origin, "turns": turns("x y")}
        status, answer = capture_as(bob_editor).post(body)
        assert answer["palace"]["id"] == project.pk and answer["palace"]["why"].startswith("editor of")


@pytest.mark.parametrize(
    ("origin", "why"),
    [(None, "no origin sent"), ("not a url", "not a git origin"), ("", "no origin sent")],
)
def test_no_usable_origin_goes_to_the_personal_palace_with_the_reason(
    alice: Any, palace: Palace, capture_as: Callable[..., Any], turns: Any, origin: str | None, why: str
) -> None:
    status, answer = capture_as(alice).post({"session": "s-o", "origin": origin, "turns": turns("a b c")})
    assert status == 202
    assert answer["palace"]["id"] == palace.pk and why in answer["palace"]["why"]


# --- bad input ---------------------------------------------------------------------------------------------------

BAD = [
    ({"turns": []}, "session"),
    ({"session": "", "turns": []}, "session"),
    ({"session": "has space", "turns": []}, "session"),
    ({"session": "x" * 201, "turns": []}, "session"),
    ({"session": "s", "turns": "no"}, "turns"),
    ({"session": "s", "turns": [{"index": -1, "role": "user", "text": "x"}]}, "index"),
    ({"session": "s", "turns": [{"index": 0, "role": "system", "text": "x"}]}, "role"),
    ({"session": "s", "turns": [{"index": 0, "role": "user", "text": "x" * 65_537}]}, "text"),
    ({"session": "s", "turns": [{"index": 0, "role": "user", "text": "x", "at": "yesterday"}]}, "at"),
    ({"session": "s", "turns": [{"index": i, "role": "user", "text": "x"} for i in range(201)]}, "turns"),
    ({"session": "s", "mode": "loud", "turns": []}, "mode"),
]


@pytest.mark.parametrize(("body", "field"), BAD)
def test_malformed_bodies_are_a_422_naming_the_field_and_store_nothing(
    alice: Any, capture_as: Callable[..., Any], body: dict[str, Any], field: str
) -> None:
    status, answer = capture_as(alice).post(body)
    assert status == 422, answer
    assert field in answer["error"]["message"]
    assert not CaptureSession.objects.exists()


def test_a_body_that_is_not_json_is_a_422(alice: Any, capture_as: Callable[..., Any]) -> None:
    client = capture_as(alice).client
    response = client.post("/api/v1/capture", "{not json", content_type="application/json")
    assert response.status_code == 422 and "JSON" in response.json()["error"]["message"]
    ok = client.post("/api/v1/capture", {"session": "s", "turns": []}, content_type="application/json")
    assert ok.status_code == 202  # the positive control


def test_unknown_fields_are_welcome(alice: Any, capture_as: Callable[..., Any]) -> None:
    body = {
        "session": "s-extra",
        "cwd": "/home/alice/app",
        "model": "claude",
        "turns": [{"index": 0, "role": "user", "text": "hello there friend", "uuid": "u-1", "isSidechain": False}],
    }
    status, answer = capture_as(alice).post(body)
    assert (status, answer["stored"]) == (202, 1)
    assert CaptureSession.objects.get(key="s-extra").cwd == "/home/alice/app"
