"""Redaction through the doors text comes in by (issue 24, Low): a save's secret value is scrubbed whole, and a
forget's reason is scrubbed before it becomes the epitaph and the op row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memory.models import Memory
from palace.models import OpLog
from tests.api.conftest import Api

URL = "/api/v1/memories"


def test_a_secret_assignment_is_redacted_whole_not_up_to_its_first_ampersand(
    alice: Any, api_for: Callable[..., Api]
) -> None:
    api = api_for(alice)
    status, body = api.post(URL, {"content": "Restore staging with PGPASSWORD=Tr0ub4dor&3xyz pg_restore -d app"})
    assert status == 201, body
    stored = Memory.objects.get(pk=body["memory"]["id"]).content
    assert "3xyz" not in stored and "Tr0ub4dor" not in stored
    assert "PGPASSWORD=[REDACTED:password] pg_restore -d app" in stored
    assert body["redactions"] == ["password"]
    # positive control: a query string's next parameter is not part of the secret and stays readable
    status, body = api.post(URL, {"content": "The search link is /find?api_key=abc123&page=2 for the dashboard"})
    assert status == 201, body
    stored = Memory.objects.get(pk=body["memory"]["id"]).content
    assert "api_key=[REDACTED:password]&page=2" in stored and "abc123" not in stored


def test_a_forget_reason_is_redacted_in_the_epitaph_and_the_op_row(alice: Any, api_for: Callable[..., Api]) -> None:
    api = api_for(alice)
    ids = []
    for content in ("The staging database listens on port 5433.", "Deploys happen on Fridays at 5pm."):
        status, body = api.post(URL, {"content": content})
        assert status == 201, body
        ids.append(body["memory"]["id"])
    secret_reason = "rotated, the new one is PGPASSWORD=Tr0ub4dor&3xyz"
    status, body = api.post(f"{URL}/{ids[0]}/forget", {"reason": secret_reason})
    assert status == 200, body
    assert body["epitaph"] == "rotated, the new one is PGPASSWORD=[REDACTED:password]"
    row = Memory.objects.get(pk=ids[0])
    op = OpLog.objects.get(op="memory.forget", target_id=ids[0])
    for stored in (row.epitaph, op.reason, body["epitaph"]):
        assert "Tr0ub4dor" not in stored and "3xyz" not in stored
    assert row.status == "forgotten"
    # positive control: a reason without a secret is stored as written
    status, body = api.post(f"{URL}/{ids[1]}/forget", {"reason": "we deploy continuously now"})
    assert status == 200 and body["epitaph"] == "we deploy continuously now"
    assert Memory.objects.get(pk=ids[1]).epitaph == "we deploy continuously now"
    assert OpLog.objects.get(op="memory.forget", target_id=ids[1]).reason == "we deploy continuously now"
