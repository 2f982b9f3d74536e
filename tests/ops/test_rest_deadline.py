"""The deadline on REST requests (config/deadline.py; issue 24, "Medium 5"): a request past ATRIUM_REST_DEADLINE_SECONDS
is answered 504 naming the setting and its work is rolled back; a statement running when the deadline passes is
cancelled by PostgreSQL; the connection gets its own statement_timeout back; the import has its own deadline."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection, transaction
from django.test import Client

from config.deadline import DeadlineExceeded, deadline_scope
from memory.models import Memory
from ops.portability import export_document
from palace.models import OpLog, Palace
from tests.fakes.memories import make_memory

SAVE = "/api/v1/memories"
NEW_PROJECT = "https://github.com/atrium-test/imported.git"


def _statement_timeout() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        return str(cursor.fetchone()[0])


def _save(alice: Any, bearer: Any, token: str, content: str) -> Any:
    body = {"palace": alice.personal_palace.pk, "content": content, "kind": "decision"}
    return Client().post(SAVE, json.dumps(body), content_type="application/json", **bearer(token))


def test_a_save_past_the_deadline_is_answered_504_and_stores_nothing(
    alice: Any, token_for: Any, bearer: Any, settings: Any
) -> None:
    token = token_for(alice)
    ops_before = OpLog.objects.count()
    settings.ATRIUM_REST_DEADLINE_SECONDS = 1e-6  # over before the request's first statement
    late = _save(alice, bearer, token, "we ship the billing service on Tuesdays")
    assert late.status_code == 504
    error = late.json()["error"]
    assert error["code"] == "deadline_exceeded" and "ATRIUM_REST_DEADLINE_SECONDS" in error["message"]
    assert not Memory.objects.filter(content__contains="billing service").exists()
    assert OpLog.objects.count() == ops_before

    settings.ATRIUM_REST_DEADLINE_SECONDS = 20  # the control: the same request within its deadline
    ok = _save(alice, bearer, token, "we ship the billing service on Tuesdays")
    assert ok.status_code == 201, ok.content
    assert Memory.objects.filter(content__contains="billing service", palace=alice.personal_palace).count() == 1
    # The request brought the connection's timeout down to its deadline, and gave the role's back at its end.
    assert _statement_timeout() == "30s"


def test_a_statement_running_when_the_deadline_passes_is_cancelled_by_the_database(db: Any) -> None:
    before = _statement_timeout()
    with deadline_scope(seconds=10, setting="ATRIUM_REST_DEADLINE_SECONDS"):
        with connection.cursor() as cursor:  # the control: a statement within the deadline runs
            cursor.execute("SELECT pg_sleep(0.01), setting::int FROM pg_settings WHERE name = 'statement_timeout'")
            _, bound_ms = cursor.fetchone()
    assert 0 < bound_ms <= 10_000  # brought down to the time left (the role's is 30 s)
    with pytest.raises(DeadlineExceeded, match="ATRIUM_REST_DEADLINE_SECONDS") as raised:
        with deadline_scope(seconds=0.3, setting="ATRIUM_REST_DEADLINE_SECONDS"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_sleep(30)")  # far past the deadline: only a cancel ends it early
    assert "canceling statement due to statement timeout" in str(raised.value.__cause__)
    assert _statement_timeout() == before == "30s"  # the connection's own timeout is back


def test_the_import_has_its_own_longer_deadline(alice: Any, token_for: Any, bearer: Any, settings: Any) -> None:
    make_memory(alice.personal_palace, "the release train leaves every second Thursday")
    document = export_document(user=alice)
    url = f"/api/v1/import?project={quote(NEW_PROJECT)}"
    token = token_for(alice)
    settings.ATRIUM_REST_DEADLINE_SECONDS = 1e-6
    settings.ATRIUM_REST_IMPORT_DEADLINE_SECONDS = 1e-6
    late = Client().post(url, document, content_type="application/json", **bearer(token))
    assert late.status_code == 504 and "ATRIUM_REST_IMPORT_DEADLINE_SECONDS" in late.json()["error"]["message"]
    assert not Palace.objects.filter(origin_key="github.com/atrium-test/imported").exists()

    settings.ATRIUM_REST_IMPORT_DEADLINE_SECONDS = 300  # every other REST request is still over at once
    answer = Client().post(url, document, content_type="application/json", **bearer(token))
    assert answer.status_code == 200, answer.content
    imported = Palace.objects.get(origin_key="github.com/atrium-test/imported")
    assert Memory.objects.filter(palace=imported, content__contains="release train").count() == 1
    assert _save(alice, bearer, token, "another decision").status_code == 504
