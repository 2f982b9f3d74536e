"""Client ID Metadata Documents (api/oauth_cimd.py): a client whose client_id is an https URL is fetched from there,
through the egress rule (an internal address only when ATRIUM_OAUTH_CIMD_ALLOWED_HOSTS names it), with a size and a
time limit, and cached. The document is served over real HTTPS on loopback by the test (a certificate made here,
trusted through SSL_CERT_FILE as an operator's CA bundle would be)."""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import json
import secrets
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.core.cache import cache
from django.test import Client
from oauth2_provider.models import Application

from tests.api.mcp.conftest import mcp_client, run

pytestmark = pytest.mark.django_db(transaction=True)

RESOURCE = "http://testserver/mcp"
REDIRECT = "http://127.0.0.1:9/callback"


@dataclass
class DocumentServer:
    base: str
    routes: dict[str, tuple[int, str, bytes]] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=dict)
    release: threading.Event = field(default_factory=threading.Event)

    def document(self, path: str, **changes: Any) -> str:
        """Serve a client's metadata at `path`; returns its client_id (the URL)."""
        client_id = self.base + path
        metadata = {
            "client_id": client_id,
            "client_name": "Loopback agent",
            "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "none",
            **changes,
        }
        self.routes[path] = (200, "application/json", json.dumps(metadata).encode())
        return client_id


def _certificate(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@pytest.fixture
def documents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DocumentServer]:
    cert, key = _certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    from api import oauth_cimd

    oauth_cimd._ssl_context.cache_clear()  # built again with the test's trust store, and after the test without it
    state: dict[str, DocumentServer] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            server = state["server"]
            server.hits[self.path] = server.hits.get(self.path, 0) + 1
            if self.path == "/slow":
                server.release.wait(30)  # held until the test has seen the fetch give up
            status, media, body = server.routes.get(self.path, (404, "text/plain", b"no"))
            self.send_response(status)
            self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    state["server"] = DocumentServer(base=f"https://127.0.0.1:{httpd.server_address[1]}")
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    cache.clear()  # the toolkit's failure backoff lives in the cache
    try:
        yield state["server"]
    finally:
        state["server"].release.set()
        httpd.shutdown()
        httpd.server_close()
        oauth_cimd._ssl_context.cache_clear()


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    return verifier, base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def _ask(browser: Client, client_id: str, challenge: str) -> Any:
    return browser.get(
        "/oauth/authorize/",
        {
            "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "s",
            "code_challenge": challenge, "code_challenge_method": "S256", "scope": "memory.read memory.write",
            "resource": RESOURCE,
        },
    )  # fmt: skip


async def _tool_names(token: str) -> set[str]:
    async with mcp_client(token) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


def test_the_metadata_server_says_client_id_documents_are_supported(db: Any) -> None:
    document = Client().get("/.well-known/oauth-authorization-server").json()
    assert document["client_id_metadata_document_supported"] is True


def test_a_document_on_a_private_address_is_refused_and_an_allowed_one_signs_in(
    alice: Any, client_for: Any, documents: DocumentServer, settings: Any
) -> None:
    browser = client_for(alice)
    verifier, challenge = _pkce()
    settings.ATRIUM_OAUTH_CIMD_ALLOWED_HOSTS = []
    refused = documents.document("/refused.json")
    page = _ask(browser, refused, challenge)
    assert page.status_code == 400 and b"invalid_client" in page.content.lower().replace(b" ", b"_")
    assert documents.hits.get("/refused.json") is None  # refused before any request: 127.0.0.1 is loopback
    assert not Application.objects.filter(client_id=refused).exists()

    # Positive control: the operator allows the host; the document is fetched, the client named by it asks.
    settings.ATRIUM_OAUTH_CIMD_ALLOWED_HOSTS = ["127.0.0.1"]
    client_id = documents.document("/agent.json")
    page = _ask(browser, client_id, challenge)
    assert page.status_code == 200, page.content
    assert b"Loopback agent" in page.content and documents.hits["/agent.json"] == 1
    app = Application.objects.get(client_id=client_id)
    assert app.registration_source == Application.RegistrationSource.CIMD and app.redirect_uris == REDIRECT

    form = {k: v for k, v in page.context["form"].initial.items() if v is not None}
    location = browser.post("/oauth/authorize/", {**form, "allow": "yes"})["Location"]
    code = parse_qs(urlsplit(location).query)["code"][0]
    token = Client().post(
        "/oauth/token/",
        {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id,
         "code_verifier": verifier, "resource": RESOURCE},
    )  # fmt: skip
    assert token.status_code == 200, token.content
    assert "memory_save" in run(_tool_names(token.json()["access_token"]))

    assert _ask(browser, client_id, challenge).status_code == 200  # cached: not fetched again within its max-age
    assert documents.hits["/agent.json"] == 1


def test_a_document_too_large_too_slow_or_naming_another_client_is_refused(
    alice: Any, client_for: Any, documents: DocumentServer, settings: Any
) -> None:
    settings.ATRIUM_OAUTH_CIMD_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "CIMD_FETCH_TIMEOUT_SECONDS": 1}
    browser = client_for(alice)
    _, challenge = _pkce()
    # a field the toolkit ignores, so only the size limit can refuse it
    big = documents.document("/big.json", note="x" * 20_000)
    other = documents.document("/other.json", client_id=documents.base + "/someone-else.json")
    slow = documents.document("/slow")
    fine = documents.document("/fine.json")
    for client_id in (big, other, slow):
        assert _ask(browser, client_id, challenge).status_code == 400, client_id
        assert not Application.objects.filter(client_id=client_id).exists()
    assert documents.hits["/slow"] == 1 and documents.hits["/big.json"] == 1  # fetched, then refused
    documents.release.set()
    assert _ask(browser, fine, challenge).status_code == 200  # control: the same server, a good document
    assert Application.objects.filter(client_id=fine).exists()
