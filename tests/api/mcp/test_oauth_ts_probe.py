"""The TypeScript MCP SDK signs in with OAuth against uvicorn serving config.asgi: tests/api/mcp/data/ts_oauth_probe
(the SDK pinned in package.json and package-lock.json, the probe script) does discovery from the 401, dynamic
registration and PKCE; this test is the person: it opens the authorization URL the probe prints with a signed-in
session, approves on the consent page, and follows the redirect to the probe's loopback listener. The probe then
initializes, lists the tools, saves and searches as that person.

It needs `node` and `npm`, and the SDK in npm's cache (`npm ci --offline`, no network at test time): without
them it skips, saying which is missing (under CI too: CI machines without node stay green)."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from html.parser import HTMLParser
from pathlib import Path
from queue import Empty, Queue
from typing import IO, Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from django.conf import settings
from django.test import Client
from oauth2_provider.models import Application

from accounts.models import ApiToken
from memory.models import Memory
from palace.models import OpLog
from palace.selectors import palace_get

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume synchronous iterators"),
]
PROBE = Path(__file__).parent / "data" / "ts_oauth_probe"
FACT = ("The TypeScript agent's releases are signed with key osprey-7.", "which key signs the releases")
SECONDS = 120


@pytest.fixture(scope="module")
def probe_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The probe with its locked dependencies installed from npm's cache into a scratch directory."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"the TypeScript SDK probe needs {' and '.join(missing)} on PATH")
    work = tmp_path_factory.mktemp("ts_oauth_probe")
    for name in ("package.json", "package-lock.json", "probe.mjs"):
        shutil.copy(PROBE / name, work / name)
    try:
        installed = subprocess.run(
            ["npm", "ci", "--offline", "--no-audit", "--no-fund", "--ignore-scripts"],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=SECONDS,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("npm ci --offline did not finish: the TypeScript SDK probe cannot be installed here")
    if installed.returncode != 0:
        tail = (installed.stderr or installed.stdout).strip().splitlines()[-3:]
        pytest.skip(
            "the TypeScript SDK is not in npm's cache (npm ci --offline failed; run `npm ci` once in "
            f"{PROBE.relative_to(settings.BASE_DIR)} with the network): {' | '.join(tail)}"
        )
    return work


class HiddenFields(HTMLParser):
    """The consent form's hidden fields (and its CSRF token), as a browser would post them back."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "input" and found.get("type") == "hidden" and found.get("name"):
            self.fields[str(found["name"])] = found.get("value") or ""


def _lines(stream: IO[str], queue: Queue[str | None]) -> None:
    for line in stream:
        queue.put(line)
    queue.put(None)  # the probe closed its output: it ended


def _next_event(queue: Queue[str | None], process: subprocess.Popen[str]) -> dict[str, Any]:
    """The probe's next JSON line; when it ends first, the test fails with what the probe said on stderr."""
    while True:
        try:
            line = queue.get(timeout=SECONDS)
        except Empty:
            pytest.fail("the probe printed nothing in time")
        if line is None:
            assert process.stderr is not None
            pytest.fail(f"the probe ended (exit {process.wait(timeout=SECONDS)}): {process.stderr.read()[-2000:]}")
        if line.strip().startswith("{"):
            return dict(json.loads(line))


def _approve(base: str, session_cookie: str, authorization_url: str) -> tuple[str, str]:
    """The person: open the authorization URL signed in, approve, follow the redirect back to the probe's
    listener. Returns the consent page's text and where the redirect went."""
    assert authorization_url.startswith(f"{base}/oauth/authorize/"), authorization_url
    cookies = {settings.SESSION_COOKIE_NAME: session_cookie}
    with httpx2.Client(cookies=cookies, timeout=60) as browser:
        page = browser.get(authorization_url)
        assert page.status_code == 200, page.text
        form = HiddenFields()
        form.feed(page.text)
        answer = browser.post(
            f"{base}/oauth/authorize/",
            data={**form.fields, "allow": "yes", "project": ""},
            headers={"Referer": authorization_url, "Origin": base},
        )
        assert answer.status_code == 302, answer.text
        back = answer.headers["location"]
        assert browser.get(back).status_code == 200  # the probe's loopback listener took the code
    return page.text, back


def test_typescript_sdk_signs_in_with_oauth_and_works_as_the_person(
    probe_dir: Path, asgi_server: str, alice: Any, charlie: Any
) -> None:
    base = asgi_server
    browser = Client()
    browser.force_login(alice)  # a signed-in session in the database the live server reads
    session_cookie = browser.cookies[settings.SESSION_COOKIE_NAME].value
    process = subprocess.Popen(
        ["node", "probe.mjs", f"{base}/mcp", FACT[0], FACT[1]],
        cwd=probe_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        lines: Queue[str | None] = Queue()
        threading.Thread(target=_lines, args=(process.stdout, lines), daemon=True).start()
        asked = _next_event(lines, process)
        assert asked["event"] == "authorize", asked
        query = parse_qs(urlsplit(asked["url"]).query)
        assert query["code_challenge_method"] == ["S256"] and query["resource"] == [f"{base}/mcp"]
        consent, back = _approve(base, session_cookie, asked["url"])
        result = _next_event(lines, process)
        assert process.wait(timeout=SECONDS) == 0, process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert "Let “Atrium TypeScript SDK probe” use your memory?" in consent
    assert back.startswith("http://127.0.0.1:") and "code=" in back
    assert result["event"] == "result" and result["asked"] == 1 and result["tokenType"].lower() == "bearer"
    assert result["serverInfo"]["name"] and result["serverInfo"]["version"]  # the installed package's version
    assert {"memory_save", "memory_search"} <= set(result["tools"])
    assert not result["saved"]["isError"], result["saved"]
    stored = Memory.objects.get(pk=result["saved"]["structuredContent"]["items"][0]["id"])
    app = Application.objects.get(client_id=result["registeredClientId"])
    grant = ApiToken.objects.get(user=alice, oauth_application=app)
    assert app.name == "Atrium TypeScript SDK probe" and app.registration_source == Application.RegistrationSource.DCR
    assert stored.palace_id == palace_get(user=alice).pk and stored.created_by_token_id == grant.pk
    assert not Memory.objects.filter(palace=palace_get(user=charlie)).exists()  # alice's, not anyone else's
    assert not result["found"]["isError"]
    assert result["found"]["structuredContent"]["hits"][0]["id"] == stored.pk
    assert grant.last_used_at is not None and grant.scope == "write"
    assert OpLog.objects.filter(op="token.create", target_id=grant.pk, actor_user=alice).exists()
