"""REST export (api/routers/export.py): the caller's own readable memories, as JSON or a vault; an outsider's
project answers 404 like a missing one (the owner gets it); signed download links expire and cannot be forged."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import time_machine
from django.core import signing
from django.test import Client
from django.utils import timezone

from ops.portability import LINK_SECONDS, link_token
from ops.portability.links import SALT as LINK_SALT
from palace.actors import Actor
from palace.models import Palace
from palace.services import member_remove
from tests.conftest import PROJECT_ORIGIN
from tests.ops.portability.world import SECRET_KEY, build_world

URL = "/api/v1/export"


def test_owner_exports_the_project_outsider_gets_404(
    project: Palace, alice: Any, charlie: Any, client_for: Any, token_for: Any, bearer: Any
) -> None:
    build_world(alice, project)
    owner = client_for(alice).get(URL, {"project": PROJECT_ORIGIN})
    assert owner.status_code == 200 and owner["Content-Disposition"].startswith("attachment")
    (section,) = json.loads(owner.getvalue())["palaces"]
    assert section["origin"] == project.origin_key and len(section["memories"]) == 4
    outsider = Client().get(URL, {"project": PROJECT_ORIGIN}, **bearer(token_for(charlie)))
    missing = Client().get(URL, {"project": "github.com/x/nothing"}, **bearer(token_for(charlie)))
    assert outsider.status_code == missing.status_code == 404
    assert outsider.json()["error"]["code"] == "not_found"
    assert Client().get(URL).status_code == 401


def test_markdown_and_redacted_and_bad_format(alice: Any, client_for: Any) -> None:
    build_world(alice, alice.personal_palace)
    client = client_for(alice)
    vault = client.get(URL, {"format": "markdown"})
    assert vault.status_code == 200 and vault["Content-Type"] == "application/zip"
    assert any(n.endswith("index.md") for n in zipfile.ZipFile(io.BytesIO(vault.getvalue())).namelist())
    redacted = client.get(URL, {"redacted": "true"})
    assert redacted.status_code == 200 and SECRET_KEY not in redacted.getvalue().decode()
    assert SECRET_KEY in client.get(URL).getvalue().decode()  # the control
    bad = client.get(URL, {"format": "pdf"})
    assert bad.status_code == 422 and "format" in bad.json()["error"]["message"]


def test_signed_link_downloads_as_its_user_until_it_expires(alice: Any) -> None:
    build_world(alice, alice.personal_palace)
    with time_machine.travel("2026-12-01 12:00:00 +0000", tick=False):
        token = link_token(user=alice, fmt="json", project=None, redacted=False)
        ok = Client().get(f"{URL}/download?token={quote(token)}")
        assert ok.status_code == 200 and json.loads(ok.getvalue())["exported_by"] == "alice"
    with time_machine.travel(f"2026-12-01 12:{LINK_SECONDS // 60 + 1:02d}:00 +0000", tick=False):
        expired = Client().get(f"{URL}/download?token={quote(token)}")
    assert expired.status_code == 404 and "expired" in expired.json()["error"]["message"]


def _download(token: str) -> Any:
    return Client().get(f"{URL}/download?token={quote(token)}")


def test_a_link_whose_payload_names_another_user_is_refused(alice: Any, charlie: Any) -> None:
    """A forged link: charlie's payload (encoded exactly as a real link for him, by the same signer and salt) put in
    front of the timestamp and signature of alice's real link; also charlie's payload signed with the right key but
    another salt, and with the right salt but another key. Only the links the server signed for each user work."""
    build_world(alice, alice.personal_palace)
    build_world(charlie, charlie.personal_palace)
    alices = link_token(user=alice, fmt="json", project=None, redacted=False)
    charlies = link_token(user=charlie, fmt="json", project=None, redacted=False)
    # The positive controls: each real link downloads its own user's export.
    assert json.loads(_download(alices).getvalue())["exported_by"] == "alice"
    assert json.loads(_download(charlies).getvalue())["exported_by"] == "charlie"

    charlie_payload = charlies.split(":")[0]
    _, alice_stamp, alice_signature = alices.split(":")
    assert signing.b64_decode(charlie_payload.lstrip(".").encode()) != signing.b64_decode(
        alices.split(":")[0].lstrip(".").encode()
    )  # the payloads do differ: the forgery changes who the link names
    spliced = f"{charlie_payload}:{alice_stamp}:{alice_signature}"
    payload = {"u": charlie.pk, "f": "json", "p": "", "r": False}
    other_salt = signing.TimestampSigner(salt="atrium.some-other-use").sign_object(payload)
    other_key = signing.TimestampSigner(key="not-the-server-key", salt=LINK_SALT).sign_object(payload)
    for forged in (spliced, other_salt, other_key):
        refused = _download(forged)
        assert refused.status_code == 404, forged
        assert refused.json()["error"]["code"] == "not_found" and b"charlie" not in refused.content
    # A link works once: alice's is spent; a fresh one of hers still works after the attempts.
    assert "already used" in _download(alices).json()["error"]["message"]
    fresh = link_token(user=alice, fmt="json", project=None, redacted=False)
    assert _download(fresh).status_code == 200


def test_a_project_link_is_refused_once_its_user_leaves_the_project(
    project: Palace, alice: Any, bob: Any, system: Actor
) -> None:
    """bob (a viewer) holds a link to the project's export; after his membership is removed the same link, still
    within its ten minutes, is refused; his link to everything he may read no longer carries the project."""
    build_world(alice, project)
    # Links are single use: one of each kind is spent on the control, its twin is held for after the removal.
    project_link, project_later = (
        link_token(user=bob, fmt="json", project=PROJECT_ORIGIN, redacted=False) for _ in range(2)
    )
    everything_link, everything_later = (
        link_token(user=bob, fmt="json", project=None, redacted=False) for _ in range(2)
    )
    before = _download(project_link)  # the positive control, while bob is a member
    assert before.status_code == 200
    (section,) = json.loads(before.getvalue())["palaces"]
    assert section["origin"] == project.origin_key and len(section["memories"]) == 4
    assert project.origin_key in [p["origin"] for p in json.loads(_download(everything_link).getvalue())["palaces"]]

    member_remove(palace=project, user=bob, actor=system)
    after = _download(project_later)
    assert after.status_code == 404 and after.json()["error"]["code"] == "not_found"
    assert b"deploy" not in after.content and "already used" not in after.json()["error"]["message"]
    rest = json.loads(_download(everything_later).getvalue())["palaces"]
    assert [p["kind"] for p in rest] == ["personal"] and project.origin_key not in [p["origin"] for p in rest]


def test_rest_import_into_a_project_for_its_owner_not_an_outsider_nor_a_read_token(
    project: Palace, alice: Any, charlie: Any, token_for: Any, bearer: Any
) -> None:
    from memory.models import Memory

    build_world(alice, alice.personal_palace)
    body = json.loads(Client().get(URL, **bearer(token_for(alice))).getvalue())
    body["palaces"] = [p for p in body["palaces"] if p["kind"] == "personal"]
    url = f"/api/v1/import?project={quote(PROJECT_ORIGIN)}"
    outsider = Client().post(url, body, content_type="application/json", **bearer(token_for(charlie)))
    assert outsider.status_code == 404
    read = Client().post(url, body, content_type="application/json", **bearer(token_for(alice, scope="read")))
    assert read.status_code == 403
    assert not Memory.objects.filter(palace=project).exists()
    owner = Client().post(url, body, content_type="application/json", **bearer(token_for(alice)))
    assert owner.status_code == 200, owner.content
    (result,) = owner.json()["palaces"]
    assert result["mode"] == "lossless" and result["counts"]["memories"] == 4
    assert Memory.objects.filter(palace=project).count() == 4
    bad = Client().post(url, {"format": "other"}, content_type="application/json", **bearer(token_for(alice)))
    assert bad.status_code == 422 and "format: Input should be 'atrium-export'" in bad.json()["error"]["message"]


def test_a_link_downloads_once_and_only_while_its_token_lives(alice: Any, charlie: Any, token_for: Any) -> None:
    """Issue 24, item 7 at the REST door: a link bound to token T works once (the second download is refused); links
    of T are refused once T is revoked or expired, while a link made by a session (no token) is bound to its user
    and works once too."""
    from accounts.models import ApiToken
    from accounts.tokens import token_revoke
    from palace.actors import Actor

    build_world(alice, alice.personal_palace)
    token_for(alice, label="T")
    token_for(alice, label="U")
    t, u = ApiToken.objects.get(label="T"), ApiToken.objects.get(label="U")

    def follow(link: str) -> Any:
        return Client().get(f"{URL}/download", {"token": link})

    by_t = [link_token(user=alice, fmt="json", project=None, redacted=False, token_id=t.pk) for _ in range(2)]
    ok = follow(by_t[0])
    assert ok.status_code == 200 and json.loads(ok.getvalue())["exported_by"] == "alice"
    used = follow(by_t[0])
    assert used.status_code == 404 and "already used" in used.json()["error"]["message"]
    token_revoke(token_id=t.pk, user=alice, actor=Actor.for_user(alice))
    revoked = follow(by_t[1])
    assert revoked.status_code == 404 and "revoked" in revoked.json()["error"]["message"]

    by_u = [link_token(user=alice, fmt="json", project=None, redacted=False, token_id=u.pk) for _ in range(2)]
    assert follow(by_u[0]).status_code == 200  # the control: a live token's link
    ApiToken.objects.filter(pk=u.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert follow(by_u[1]).status_code == 404  # its token expired since

    token_for(charlie)  # a link cannot borrow another user's live token: alice's link naming charlie's is refused
    charlie_token = ApiToken.objects.get(user=charlie)
    borrowed = link_token(user=alice, fmt="json", project=None, redacted=False, token_id=charlie_token.pk)
    assert follow(borrowed).status_code == 404

    session = link_token(user=alice, fmt="json", project=None, redacted=False)  # no token: a browser session's
    first = follow(session)
    assert first.status_code == 200 and json.loads(first.getvalue())["exported_by"] == "alice"
    assert follow(session).status_code == 404


def test_two_racing_downloads_of_one_link_give_one_file(transactional_db: Any, alice: Any) -> None:
    """The used marker is the nonce's primary key, inserted in the download's transaction: of two downloads started
    together, the second waits for the first's insert and is refused, whatever the order."""
    import threading

    from django.db import connection

    build_world(alice, alice.personal_palace)
    link = link_token(user=alice, fmt="json", project=None, redacted=False)
    start = threading.Barrier(2)
    statuses: list[int] = []

    def download() -> None:
        start.wait()
        try:
            statuses.append(Client().get(f"{URL}/download", {"token": link}).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=download) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200, 404]
