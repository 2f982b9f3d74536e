"""The one module that talks to an OpenAI-compatible chat completions endpoint.

Every LLM use in Atrium is optional and has a rule-based fallback, so this module never guesses: it either returns
a value validated against a pydantic model or raises an ``LLMError`` subclass that says what went wrong, and the
caller falls back. A use gets its configuration from ``llm_config(purpose)``, the one place that reads the model's
settings; the prompts live with their features (distillation, query rewriting, entity extraction, the judge).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import re
import ssl
import time
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pydantic
from django.conf import settings
from pydantic import BaseModel

from memory.providers.egress import (
    Destination,
    EgressRefused,
    EgressUnresolvable,
    ReplyTooLarge,
    ReplyTooSlow,
    egress_resolve,
    egress_url_check,
    read_bounded,
)

logger = logging.getLogger(__name__)

_BACKOFF_BASE_S = 0.2
_BACKOFF_MAX_S = 4.0
# A structured reply is a few kilobytes; anything far larger is not an answer to our request.
_MAX_RESPONSE_BYTES = 2 * 1024 * 1024
_FINISH_REASONS = frozenset({"stop", "length", "content_filter", "tool_calls", "function_call", None})
_FENCE = re.compile(r"\A\s*```[A-Za-z0-9_-]*[ \t]*\r?\n?(?P<body>.*?)\r?\n?\s*```\s*\Z", re.DOTALL)


# ---------------------------------------------------------------------------------------------------------------
# Configuration


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to reach the chat endpoint.

    ``base_url`` is the OpenAI-style root including the version (``https://api.openai.com/v1``,
    ``http://localhost:11434/v1``); ``/chat/completions`` is appended. An empty ``api_key`` sends no
    Authorization header (local servers such as Ollama need none). ``timeout_s`` bounds each attempt: connecting,
    and the whole reply from request to last byte. ``max_retries`` counts attempts after the first. The URL obeys
    the egress rule (memory.providers.egress): its form here, its destination at every request.
    """

    base_url: str
    api_key: str = field(repr=False)  # never in a repr, so never in a log line or a traceback
    model: str
    timeout_s: float = 20.0
    max_retries: int = 2

    def __post_init__(self) -> None:
        try:
            base_url = egress_url_check(self.base_url)
        except EgressRefused as exc:
            raise ValueError(f"LLM base URL refused: {exc}") from None
        if not self.model:
            raise ValueError("LLM model must not be empty")
        if not self.timeout_s > 0:
            raise ValueError(f"LLM timeout must be > 0 seconds, got {self.timeout_s}")
        if self.max_retries < 0:
            raise ValueError(f"LLM max_retries must be >= 0, got {self.max_retries}")
        object.__setattr__(self, "base_url", base_url)

    @property
    def chat_completions_url(self) -> str:
        return f"{self.base_url}{CHAT_PATH}"


CHAT_PATH = "/chat/completions"


@dataclass(frozen=True)
class _Purpose:
    switch: str = ""  # a setting that must be true for this use, "" when none
    timeout: str = ""  # the setting with this use's timeout in seconds, "" for LLMConfig's default
    retries: int = 0  # a use a person or an agent waits on is never retried


PURPOSES: dict[str, _Purpose] = {
    "distill": _Purpose(retries=2),  # a background job: worth a retry
    "entities": _Purpose(switch="ATRIUM_ENTITIES_MODEL", timeout="ATRIUM_ENTITIES_TIMEOUT"),
    "rewrite": _Purpose(switch="ATRIUM_SEARCH_REWRITE", timeout="ATRIUM_SEARCH_REWRITE_TIMEOUT"),
    "judge": _Purpose(),  # its endpoint, key and timeout come from the judge's own settings row
    # Capture runs on the worker, never in front of the agent; a model that does not answer in time falls back to
    # the rules for that turn (capture.extraction), so no retry.
    "capture": _Purpose(timeout="ATRIUM_CAPTURE_TIMEOUT"),
}


def llm_config(
    purpose: str,
    *,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    timeout_s: float | None = None,
) -> LLMConfig | None:
    """The chat model for one use (`PURPOSES`), or None when that use is switched off or no model is configured.

    The endpoint, model and key are ATRIUM_LLM_BASE_URL / _MODEL / _API_KEY unless given (the judge gives its
    own); the timeout and the retries are the use's. A base URL the egress rule refuses by its form (not http(s),
    userinfo, a query or a fragment) is logged and treated as no model.
    """
    use = PURPOSES[purpose]
    if use.switch and not getattr(settings, use.switch):
        return None
    base_url = (settings.ATRIUM_LLM_BASE_URL or "" if base_url is None else base_url).strip()
    model = (settings.ATRIUM_LLM_MODEL or "" if model is None else model).strip()
    if not base_url or not model:
        return None
    if timeout_s is None and use.timeout:
        timeout_s = float(getattr(settings, use.timeout))
    try:
        return LLMConfig(
            base_url=base_url,
            api_key=(settings.ATRIUM_LLM_API_KEY or "" if api_key is None else api_key).strip(),
            model=model,
            max_retries=use.retries,
            **({} if timeout_s is None else {"timeout_s": timeout_s}),
        )
    except ValueError as exc:
        logger.warning("LLM configuration for %s ignored: %s", purpose, exc)
        return None


# ---------------------------------------------------------------------------------------------------------------
# Errors


class LLMError(Exception):
    """The LLM could not give a usable answer; the caller should use its rule-based fallback."""


class LLMTimeoutError(LLMError):
    """No complete reply within ``timeout_s`` on any attempt."""


class LLMConnectionError(LLMError):
    """The endpoint could not be reached (refused, reset, closed without a reply, no address) on any attempt."""


class LLMEgressRefused(LLMError):
    """The endpoint's host resolves to an address the egress rule refuses (memory.providers.egress); not sent."""


class LLMHTTPError(LLMError):
    """The endpoint answered with an error status (after retries, for 429 and 5xx). The message has the status,
    never the body: whatever the remote wrote must not reach an error, a hint or a stored record."""

    def __init__(self, message: str, *, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class LLMBadResponseError(LLMError):
    """A 2xx reply that is not a usable chat completion: not JSON, no choices, no content, a refusal, or message
    content that is not JSON."""


class LLMSchemaError(LLMError):
    """The message content is JSON but does not match the expected schema."""


# ---------------------------------------------------------------------------------------------------------------
# Structured chat


def chat_json[M: BaseModel](
    *,
    config: LLMConfig,
    system: str,
    user: str,
    schema_name: str,
    schema: dict[str, Any],
    validator: type[M],
) -> M:
    """Ask for one JSON object matching ``schema`` and return it validated by ``validator``.

    1. POST ``{base_url}/chat/completions`` with the system and user messages, ``temperature`` 0 and a strict
       ``json_schema`` response format.
    2. On a timeout, a connection failure, 429 or 5xx, wait a little (0.2 s, 0.4 s, …, or the server's
       ``Retry-After`` up to 4 s) and try again, up to ``config.max_retries`` more times. Other 4xx fail at once.
    3. Take ``choices[0].message.content``, strip a Markdown code fence if the model added one, parse it as JSON
       and validate it with ``validator``.

    ``schema`` is sent as given; for strict mode it should list every property in ``required`` and set
    ``additionalProperties: false``. Length limits belong in ``validator``: strict mode rejects ``maxLength``.

    Errors say what went wrong by status code and error class, never with the remote's words: a reply (an error
    page, a refusal, a malformed answer) could carry anything, and these messages reach save hints, stored
    rulings and the panel.
    """
    body = {
        "model": config.model,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "temperature": 0,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": schema_name, "schema": schema, "strict": True},
        },
    }
    payload = _post_with_retries(config=config, body=body)
    content = _message_content(payload)
    try:
        data = json.loads(_strip_fence(content))
    except ValueError:
        raise LLMBadResponseError(f"message content is not JSON ({len(content)} characters)") from None
    try:
        return validator.model_validate(data)
    except pydantic.ValidationError as exc:
        raise LLMSchemaError(f"reply does not match {schema_name}: {_schema_errors(exc, validator)}") from None


def _schema_errors(exc: pydantic.ValidationError, validator: type[BaseModel]) -> str:
    """The fields (ours, by name) and error types of a validation failure; a key the reply made up is not named."""
    ours = set(validator.model_fields)
    parts = []
    for error in exc.errors()[:5]:
        loc = [str(p) for p in error["loc"]]
        where = loc[0] if loc and loc[0] in ours else ("<root>" if not loc else "<other field>")
        parts.append(f"{where}: {error['type']}")
    return "; ".join(parts)


def _destination(config: LLMConfig) -> Destination:
    # Resolved once per call: every attempt goes to the address that was checked (memory.providers.egress).
    try:
        return egress_resolve(config.base_url)
    except EgressRefused as exc:
        raise LLMEgressRefused(str(exc)) from None
    except EgressUnresolvable as exc:
        raise LLMConnectionError(f"cannot reach the endpoint: {exc}") from None


def _post_with_retries(*, config: LLMConfig, body: dict[str, Any]) -> Any:
    destination = _destination(config)
    headers = {"Accept": "application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    attempts = config.max_retries + 1
    with httpx2.Client(
        timeout=httpx2.Timeout(config.timeout_s),
        verify=_ssl_context(),
        follow_redirects=False,
        trust_env=False,  # the proxy, if any, was chosen by the configured name (Destination.proxy)
        proxy=destination.proxy,
    ) as client:
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                status, raw, retry_after = _post_once(
                    client=client, config=config, destination=destination, headers=headers, body=body
                )
            except (LLMTimeoutError, LLMConnectionError) as exc:
                if last:
                    raise
                delay = _backoff(attempt=attempt, retry_after=None)
                logger.warning("LLM request failed (%s); retry %d/%d in %.1fs", exc, attempt + 1, attempts - 1, delay)
                time.sleep(delay)
                continue
            if 200 <= status < 300:
                try:
                    return json.loads(raw)
                except ValueError:
                    raise LLMBadResponseError(f"HTTP {status}, the body is not JSON ({len(raw)} characters)") from None
            if _is_retryable(status) and not last:
                delay = _backoff(attempt=attempt, retry_after=retry_after)
                logger.warning(
                    "LLM endpoint answered %d; retry %d/%d in %.1fs", status, attempt + 1, attempts - 1, delay
                )
                time.sleep(delay)
                continue
            raise LLMHTTPError(f"LLM endpoint answered HTTP {status}", status_code=status)
    raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle takes ~0.1 s; build it once per process rather than once per call.
    return httpx2.create_ssl_context()


def _post_once(
    *, client: httpx2.Client, config: LLMConfig, destination: Destination, headers: dict[str, str], body: dict[str, Any]
) -> tuple[int, str, str | None]:
    """One attempt; returns (status, body text, Retry-After) or raises the timeout / connection error.

    httpx's read timeout applies to each read, so a server that trickles bytes could hold us forever; reading
    the body in chunks against a deadline makes ``timeout_s`` bound the whole reply.
    """
    deadline = time.monotonic() + config.timeout_s
    request = destination.request(CHAT_PATH)
    headers = {**headers, **request["headers"]}
    try:
        with client.stream(
            "POST", request["url"], json=body, headers=headers, extensions=request["extensions"]
        ) as response:
            try:
                raw = read_bounded(response.iter_bytes(), limit=_MAX_RESPONSE_BYTES, deadline=deadline)
            except ReplyTooLarge:
                raise LLMBadResponseError(f"response larger than {_MAX_RESPONSE_BYTES} bytes") from None
            except ReplyTooSlow:
                raise LLMTimeoutError(f"no complete reply within {config.timeout_s}s") from None
            text = raw.decode(response.encoding or "utf-8", errors="replace")
            return response.status_code, text, response.headers.get("Retry-After")
    except httpx2.TimeoutException as exc:
        raise LLMTimeoutError(f"no reply within {config.timeout_s}s ({type(exc).__name__})") from None
    except httpx2.TransportError as exc:
        # The class only: a protocol error's text can quote the bytes the remote sent.
        raise LLMConnectionError(f"cannot reach the endpoint ({type(exc).__name__})") from None


def _is_retryable(status: int) -> bool:
    # The server is busy or broken right now and may not be in a moment. Any other 4xx is our fault, and sending
    # the same request again cannot help.
    return status == 429 or status >= 500


def _backoff(*, attempt: int, retry_after: str | None) -> float:
    delay = _BACKOFF_BASE_S * 2.0**attempt
    # An HTTP-date Retry-After is rare from LLM servers; when it is not a number the exponential delay will do.
    if retry_after is not None:
        with contextlib.suppress(ValueError):
            delay = max(delay, float(retry_after))
    return min(delay, _BACKOFF_MAX_S)


def _message_content(payload: Any) -> str:
    try:
        choice = payload["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError) as exc:
        raise LLMBadResponseError("response has no choices[0].message") from exc
    if not isinstance(message, dict):
        raise LLMBadResponseError("choices[0].message is not an object")
    if message.get("refusal"):
        raise LLMBadResponseError("the model refused (a refusal instead of content)")
    content = message.get("content")
    if not isinstance(content, str) or not content.strip():
        finish = choice.get("finish_reason") if isinstance(choice, dict) else None
        finish = finish if finish in _FINISH_REASONS else "other"  # a known word, never the remote's free text
        raise LLMBadResponseError(f"choices[0].message.content is empty (finish_reason={finish})")
    return content


def _strip_fence(content: str) -> str:
    # Some OpenAI-compatible servers ignore response_format and wrap the JSON in a ```json fence.
    match = _FENCE.match(content)
    return match.group("body") if match else content


# ---------------------------------------------------------------------------------------------------------------
# Distillation


# ---------------------------------------------------------------------------------------------------------------
# Query rewriting (search)
