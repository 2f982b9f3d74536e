"""The egress rule (memory.providers.egress) for every outbound URL: the URL's form, the addresses its host resolves
to, the operator's allow-list, and the request bound to the address that was checked. Each door that sends
requests — the chat model (distillation, entities, rewriting, the judge) and the embeddings endpoint — is shown
refusing an internal address, with the allow-list as the positive control, against the fake server on loopback."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from memory.providers import EmbedderUnavailable
from memory.providers.egress import (
    EgressRefused,
    EgressUnresolvable,
    address_kind,
    egress_check,
    egress_resolve,
    egress_url_check,
)
from memory.providers.embeddings import OpenAIEmbeddings
from memory.providers.llm import LLMConnectionError, LLMEgressRefused, chat_json, llm_config
from tests.fakes.openai_server import CHAT_PATH, EMBEDDINGS_PATH, FakeOpenAI
from tests.fakes.openai_server import chat_json as reply_json


class Reply(BaseModel):
    ok: bool


SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def srv() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(embedding_dim=384) as server:
        yield server


def _ask(base_url: str, settings: Any) -> Reply:
    settings.ATRIUM_LLM_BASE_URL, settings.ATRIUM_LLM_MODEL, settings.ATRIUM_LLM_API_KEY = base_url, "m", "sk-x"
    config = llm_config("distill")
    assert config is not None
    return chat_json(config=config, system="s", user="u", schema_name="reply", schema=SCHEMA, validator=Reply)


# --- the URL's form ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://user:pw@api.example.com/v1", "user name or password"),
        ("http://evil@127.0.0.1:8000/v1", "user name or password"),
        ("https://api.example.com/v1?x=/admin", "query"),
        ("https://api.example.com/v1?", "query"),
        ("https://api.example.com/v1#/steal", "fragment"),
        ("ftp://api.example.com/v1", "http:// or https://"),
        ("api.example.com/v1", "http:// or https://"),
        ("http:///v1", "http:// or https://"),
        ("http://api.example.com:99999/v1", "not a valid URL"),
    ],
)
def test_a_url_with_userinfo_query_fragment_or_no_host_is_refused(url: str, words: str) -> None:
    with pytest.raises(EgressRefused, match=words):
        egress_url_check(url)
    assert egress_url_check("https://api.example.com:8443/v1/") == "https://api.example.com:8443/v1"  # control


# --- the addresses -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fc00::1", "unique-local"),
        ("fd12:3456::1", "unique-local"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("100.64.0.1", "special-purpose"),
        ("::ffff:127.0.0.1", "loopback (inside ::ffff:7f00:1)"),
        ("64:ff9b::a9fe:a9fe", "link-local (inside 64:ff9b::a9fe:a9fe)"),
        ("2002:a00:1::", "private (inside 2002:a00:1::)"),
        ("8.8.8.8", ""),
        ("2001:4860:4860::8888", ""),
        ("::ffff:8.8.8.8", ""),
    ],
)
def test_address_kinds(address: str, kind: str) -> None:
    import ipaddress

    assert address_kind(ipaddress.ip_address(address)) == kind


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://127.0.0.1:9/v1", "loopback"),
        ("http://localhost:9/v1", "loopback"),
        ("http://2130706433:9/v1", "loopback"),  # 127.0.0.1 spelled as a number: the resolved address is checked
        ("http://169.254.169.254/latest/meta-data", "link-local"),
        ("http://10.0.0.5/v1", "private"),
        ("http://[fd00::1]/v1", "unique-local"),
        ("http://0.0.0.0:8000/v1", "unspecified"),
        ("http://[::ffff:169.254.169.254]/v1", "link-local"),
    ],
)
def test_internal_addresses_are_refused_unless_allowed(url: str, kind: str, settings: Any) -> None:
    settings.ATRIUM_LLM_ALLOWED_HOSTS = []
    with pytest.raises(EgressRefused, match=f"is a {kind}.*ATRIUM_LLM_ALLOWED_HOSTS"):
        egress_resolve(url)
    with pytest.raises(EgressRefused):
        egress_check(url)  # what the settings forms call
    settings.ATRIUM_LLM_ALLOWED_HOSTS = ["0.0.0.0/0", "::/0"]  # positive control: every network allowed
    assert egress_resolve(url).address


def test_the_allow_list_names_hosts_addresses_and_networks(settings: Any) -> None:
    settings.ATRIUM_LLM_ALLOWED_HOSTS = ["localhost"]
    assert egress_resolve("http://localhost:9/v1").address in ("127.0.0.1", "::1")
    with pytest.raises(EgressRefused):
        egress_resolve("http://127.0.0.1:9/v1")  # the name is allowed, not every loopback address
    settings.ATRIUM_LLM_ALLOWED_HOSTS = ["10.0.5.0/24", "fd00::1"]
    assert egress_resolve("http://10.0.5.7/v1").address == "10.0.5.7"
    assert egress_resolve("http://[fd00::1]:8080/v1").url == "http://[fd00::1]:8080/v1"
    with pytest.raises(EgressRefused):
        egress_resolve("http://10.0.6.7/v1")


def test_a_public_host_is_allowed_and_a_host_that_does_not_resolve_is_not_a_refusal(settings: Any) -> None:
    settings.ATRIUM_LLM_ALLOWED_HOSTS = []
    assert egress_resolve("https://8.8.8.8/v1").address == "8.8.8.8"  # resolving an address sends nothing
    with pytest.raises(EgressUnresolvable):
        egress_resolve("https://no-such-host.invalid/v1")
    assert egress_check("https://no-such-host.invalid/v1") == "https://no-such-host.invalid/v1"  # checked per request


def test_a_name_that_also_resolves_to_an_internal_address_is_refused(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.ATRIUM_LLM_ALLOWED_HOSTS = []
    answers = [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, 443)) for ip in ("8.8.8.8", "169.254.169.254")]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: answers)
    with pytest.raises(EgressRefused, match=r"judge\.example \(169\.254\.169\.254\) is a link-local"):
        egress_resolve("https://judge.example/v1")
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: answers[:1])
    destination = egress_resolve("https://judge.example/v1")
    assert (destination.url, destination.host, destination.sni_hostname) == (
        "https://8.8.8.8/v1",
        "judge.example",
        "judge.example",
    )
    assert destination.request("/chat/completions") == {
        "url": "https://8.8.8.8/v1/chat/completions",
        "headers": {"Host": "judge.example"},
        "extensions": {"sni_hostname": "judge.example"},  # TLS name and certificate check: the configured name
    }


# --- the request goes to the address that was checked (no DNS rebinding) ------------------------------------------


def test_the_request_goes_to_the_checked_address_not_a_second_dns_answer(
    srv: FakeOpenAI, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """judge.test resolves to 127.0.0.1 (allowed by address) once, then to 127.0.0.2 (refused, and nothing listens
    there). A client that resolved the name again would connect to the second answer and fail."""
    settings.ATRIUM_LLM_ALLOWED_HOSTS = ["127.0.0.1"]
    answers = iter(["127.0.0.1"] + ["127.0.0.2"] * 10)
    lookups: list[str] = []
    real = socket.getaddrinfo

    def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "judge.test":
            return real(host, port, *args, **kwargs)
        lookups.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    srv.script_chat([reply_json({"ok": True})])
    assert _ask(f"http://judge.test:{srv.port}/v1", settings) == Reply(ok=True)
    assert lookups == ["judge.test"]  # resolved once, by the check
    assert srv.requests_to(CHAT_PATH)[0].headers["host"] == f"judge.test:{srv.port}"  # the name, at the address
    # The next call resolves again and gets the refused answer: nothing is sent.
    with pytest.raises(LLMEgressRefused, match=r"judge\.test \(127\.0\.0\.2\) is a loopback"):
        _ask(f"http://judge.test:{srv.port}/v1", settings)
    assert len(srv.requests_to(CHAT_PATH)) == 1


# --- every door that sends requests ------------------------------------------------------------------------------


def test_the_chat_model_refuses_loopback_unless_allowed(srv: FakeOpenAI, settings: Any) -> None:
    settings.ATRIUM_LLM_ALLOWED_HOSTS = []
    with pytest.raises(LLMEgressRefused, match="127.0.0.1 is a loopback address"):
        _ask(srv.base_url, settings)
    assert srv.requests == []  # nothing was sent
    settings.ATRIUM_LLM_ALLOWED_HOSTS = ["127.0.0.1"]
    srv.script_chat([reply_json({"ok": True})])
    assert _ask(srv.base_url, settings) == Reply(ok=True)
    assert srv.requests_to(CHAT_PATH)[0].headers["authorization"] == "Bearer sk-x"


def test_an_env_url_with_userinfo_or_a_query_is_no_model(settings: Any) -> None:
    settings.ATRIUM_LLM_MODEL = "m"
    for url in ("http://u:p@127.0.0.1:9/v1", "http://127.0.0.1:9/v1?x", "http://127.0.0.1:9/v1#x"):
        settings.ATRIUM_LLM_BASE_URL = url
        assert llm_config("distill") is None
    settings.ATRIUM_LLM_BASE_URL = "http://127.0.0.1:9/v1"
    assert llm_config("distill") is not None  # positive control


def test_an_unresolvable_host_is_a_connection_error(settings: Any) -> None:
    with pytest.raises(LLMConnectionError, match="does not resolve"):
        _ask("http://no-such-host.invalid/v1", settings)


def test_the_embeddings_endpoint_refuses_loopback_unless_allowed(srv: FakeOpenAI, settings: Any) -> None:
    settings.ATRIUM_LLM_ALLOWED_HOSTS = []
    embedder = OpenAIEmbeddings(base_url=srv.base_url, api_key="sk-e", model="e")
    with pytest.raises(EmbedderUnavailable, match="127.0.0.1 is a loopback address"):
        embedder.passages(["hello"])
    assert srv.requests == []
    settings.ATRIUM_LLM_ALLOWED_HOSTS = ["127.0.0.1"]
    assert embedder.passages(["hello"]).shape == (1, 384)
    assert srv.requests_to(EMBEDDINGS_PATH)[0].headers["authorization"] == "Bearer sk-e"
    with pytest.raises(EmbedderUnavailable, match="query"):
        OpenAIEmbeddings(base_url=srv.base_url + "?x=1", api_key="", model="e")


def test_an_embeddings_error_reports_the_status_never_the_body(srv: FakeOpenAI) -> None:
    from tests.fakes.openai_server import raw_body

    secret = "sk-LEAKED-from-the-remote-9f8e7d"
    srv.script_embeddings([raw_body(f"upstream said: {secret}", status=500), raw_body(f"<{secret}>", status=200)])
    embedder = OpenAIEmbeddings(base_url=srv.base_url, api_key="", model="e")
    with pytest.raises(EmbedderUnavailable) as failed:
        embedder.passages(["hello"])
    assert str(failed.value) == "embeddings endpoint answered HTTP 500"
    with pytest.raises(EmbedderUnavailable) as garbled:
        embedder.passages(["hello"])
    assert secret not in str(garbled.value) and "JSONDecodeError" in str(garbled.value)
