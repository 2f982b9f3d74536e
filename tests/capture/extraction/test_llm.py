"""The model path through the fake OpenAI server: facts parsed and labelled, the limit enforced, the prompt's
anti-echo rule, and every failure falling back to the rules with its reason recorded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from capture.extraction import ExtractionModelError, extract_turn, llm_facts, summarize_session
from memory.providers import llm_config
from memory.text import wrap_memory_context
from tests.fakes.openai_server import CHAT_PATH, FakeOpenAI, chat_content, chat_json, http_error, slow

TURN = "Let's keep it simple. I prefer pytest fixtures over setUp methods. We decided to drop Python 3.10."
FACTS = [
    {"content": "The user prefers pytest fixtures over setUp methods.", "kind": "preference"},
    {"content": "The team dropped support for Python 3.10.", "kind": "decision"},
    {"content": "The user likes simple code.", "kind": "preference"},
]


@pytest.fixture
def model(settings: Any) -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        settings.ATRIUM_LLM_BASE_URL = server.base_url
        settings.ATRIUM_LLM_API_KEY = "sk-test"
        settings.ATRIUM_LLM_MODEL = "fake-model"
        settings.ATRIUM_CAPTURE_TIMEOUT = 1.0
        yield server


def test_the_model_facts_are_parsed_labelled_and_cut_to_the_limit(model: FakeOpenAI) -> None:
    model.script_chat([chat_json({"facts": FACTS}), chat_json({"facts": FACTS})])
    light = extract_turn(text=TURN, role="user", mode="light")
    assert (light.method, light.fallback_reason) == ("llm", "")
    assert [(f.content, f.kind, f.pattern) for f in light.facts] == [
        (FACTS[0]["content"], "preference", "llm"),
        (FACTS[1]["content"], "decision", "llm"),
    ]  # light: at most 2, though the model sent 3
    assert len(llm_facts(TURN, role="user", limit=5)) == 3
    request = model.requests_to(CHAT_PATH)[0].json
    system, user = (m["content"] for m in request["messages"])
    assert "at most 2 facts" in system and "Restating memory is not new information" in system
    assert "Role of the speaker: user" in user and "I prefer pytest fixtures" in user
    assert request["response_format"]["json_schema"]["strict"] is True


def test_recall_is_scrubbed_before_the_model_sees_the_turn_and_a_fact_built_on_a_placeholder_is_dropped(
    model: FakeOpenAI,
) -> None:
    text = "mcp__atrium__memory_search\n" + wrap_memory_context("- The user prefers tabs.") + "\nI prefer tabs."
    model.script_chat(
        [
            chat_json(
                {
                    "facts": [
                        {"content": "[atrium memory_search output omitted] says tabs.", "kind": "fact"},
                        {"content": "The user prefers tabs.", "kind": "preference"},
                    ]
                }
            )
        ]
    )
    result = extract_turn(text=text, role="user", mode="eager")
    sent = model.requests_to(CHAT_PATH)[0].json["messages"][1]["content"]
    assert "[atrium memory_search output omitted]" in sent and "The user prefers tabs." not in sent
    assert [f.content for f in result.facts] == ["The user prefers tabs."] and result.echoes == ["memory_search"]


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        (slow(3.0), "timeout"),
        (chat_json({"facts": [{"content": "x", "kind": "opinion"}]}), "invalid answer"),
        (chat_content("sure, here are the facts"), "invalid answer"),
        (http_error(500), "model error"),
    ],
)
def test_a_failing_model_falls_back_to_the_rules_with_the_reason(
    model: FakeOpenAI, behaviour: Any, reason: str
) -> None:
    model.script_chat([behaviour])
    result = extract_turn(text=TURN, role="user", mode="eager")
    assert result.method == "rules" and result.fallback_reason.startswith(reason), result.fallback_reason
    assert [(f.pattern, f.kind) for f in result.facts] == [("prefer", "preference"), ("decided", "decision")]
    assert result.episode == TURN
    model.script_chat([behaviour])
    with pytest.raises(ExtractionModelError) as raised:
        llm_facts(TURN, role="user", limit=5)
    assert raised.value.reason.startswith(reason)


def test_no_model_means_rules_without_a_call(model: FakeOpenAI, settings: Any) -> None:
    settings.ATRIUM_LLM_MODEL = ""
    result = extract_turn(text=TURN, role="user", mode="light")
    assert (result.method, result.fallback_reason) == ("rules", "no model configured")
    assert [f.pattern for f in result.facts] == ["prefer", "decided"]
    with pytest.raises(ExtractionModelError, match="no model configured"):
        llm_facts(TURN, role="user", limit=2)
    assert model.requests_to(CHAT_PATH) == []


def test_the_session_summary_by_the_model_and_its_fallback(model: FakeOpenAI) -> None:
    turns = [("user", "hi"), ("user", "The login test is flaky on CI; find out why."), ("assistant", "On it.")]
    model.script_chat([chat_json({"summary": "Found why the login test is flaky on CI: a race in the fixture. " * 4})])
    summary = summarize_session(turns=turns)
    assert summary.method == "llm" and summary.fallback_reason == ""
    assert summary.text.startswith("Found why the login test") and len(summary.text) <= 160
    assert "user: The login test is flaky" in model.requests_to(CHAT_PATH)[0].json["messages"][1]["content"]
    model.script_chat([slow(3.0)])
    fallback = summarize_session(turns=turns)
    assert (fallback.method, fallback.text) == ("rules", "The login test is flaky on CI; find out why.")
    assert fallback.fallback_reason.startswith("timeout")


def test_the_capture_purpose_takes_its_timeout_and_is_not_retried(model: FakeOpenAI, settings: Any) -> None:
    settings.ATRIUM_CAPTURE_TIMEOUT = 7.5
    config = llm_config("capture")
    assert config is not None and (config.timeout_s, config.max_retries, config.model) == (7.5, 0, "fake-model")
    model.script_chat([http_error(503)])
    with pytest.raises(ExtractionModelError, match="model error"):
        llm_facts(TURN, role="user", limit=2)
    assert len(model.requests_to(CHAT_PATH)) == 1  # one attempt: the turn falls back to the rules instead


def test_a_bad_role_or_limit_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="role must be 'user' or 'assistant', got 'tool'"):
        llm_facts(TURN, role="tool", limit=2)
    with pytest.raises(ValueError, match="limit must be at least 0"):
        llm_facts(TURN, role="user", limit=-1)
