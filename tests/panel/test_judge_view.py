"""The Judge view (/judge/): open contradictions of the scope side by side with the four decisions, recent rulings
with filters, and the admin's settings card (the key never in the page source)."""

from __future__ import annotations

from typing import Any

from memory.judge import judge_config
from memory.models import Edge, JudgeSettings
from palace.models import Palace
from tests.fakes.judging import OLDER, contradiction
from tests.fakes.openai_server import FakeOpenAI, chat_json

KEY = "sk-view-secret-key-98765-zyxw"


def test_open_contradictions_side_by_side_only_for_members(
    alice: Any, bob: Any, charlie: Any, client_for: Any, project: Palace
) -> None:
    edge = contradiction(project, alice).edge.pk
    owner = client_for(alice)
    assert f'id="edge-{edge}"' not in owner.get("/judge/").content.decode()  # the scope is "my palace"
    owner.post("/scope/", {"mode": "both", "project": project.pk, "next": "/judge/"})
    page = owner.get("/judge/").content.decode()
    assert (
        f'id="edge-{edge}"' in page
        and '<mark class="diff del">8000</mark>' in page
        and '<mark class="diff ins">8001</mark>' in page
        and "Older" in page
        and "Newer" in page
    )
    assert 'value="keep_older"' in page and "rules (off)" in page
    viewer = client_for(bob)
    viewer.post("/scope/", {"mode": "project", "project": project.pk, "next": "/judge/"})
    seen = viewer.get("/judge/").content.decode()
    assert f'id="edge-{edge}"' in seen and 'value="keep_older"' not in seen  # a viewer reads, cannot decide
    other = client_for(charlie).get("/judge/").content.decode()
    assert f'id="edge-{edge}"' not in other and OLDER not in other and "No open contradictions" in other


def test_a_decision_from_the_view_returns_to_it_and_the_edge_leaves(
    alice: Any, client_for: Any, personal: Palace
) -> None:
    edge = contradiction(personal, alice).edge.pk
    client = client_for(alice)
    response = client.post(f"/palace/e/{edge}/resolve/", {"decision": "keep_newer", "back": "judge"})
    assert response.status_code == 302 and response["Location"].endswith("/judge/")
    assert Edge.objects.get(pk=edge).status == "confirmed"
    assert f'id="edge-{edge}"' not in client.get("/judge/").content.decode()


def test_rulings_filter_by_verdict_and_by_who_ruled(alice: Any, client_for: Any, personal: Palace) -> None:
    contradiction(personal, alice)
    client = client_for(alice)
    assert 'class="row ruling v-defer"' in client.get("/judge/?verdict=defer").content.decode()
    assert 'class="row ruling' not in client.get("/judge/?verdict=merge").content.decode()
    assert 'class="row ruling' not in client.get("/judge/?by=model").content.decode()
    assert 'class="row ruling' in client.get("/judge/?by=rules&fallback=off").content.decode()


def test_settings_card_is_for_admins_and_never_carries_the_key(alice: Any, client_for: Any, make_user: Any) -> None:
    admin = client_for(make_user("root", admin=True))
    with FakeOpenAI() as fake:
        form = {"enabled": "on", "base_url": fake.base_url, "model": "judge-v", "timeout_ms": "2000", "api_key": KEY}
        assert admin.post("/judge/settings/", form).status_code == 302
        assert JudgeSettings.objects.get().enabled and judge_config().llm is not None
        page = admin.get("/judge/").content.decode()
        assert 'id="judge-settings"' in page and KEY not in page and "zyxw" in page  # the mask only
        fake.script_chat([chat_json({"same": 1.0, "contradicts": 0.0, "reason": "same"})])
        tested = admin.post("/judge/test/", {**form, "model": "typed", "api_key": ""}).content.decode()
        assert "Reachable: typed answered in" in tested and KEY not in tested
        assert JudgeSettings.objects.get().model == "judge-v"  # the typed model was not stored
    member = client_for(alice)
    assert 'id="judge-settings"' not in member.get("/judge/").content.decode()
    assert member.post("/judge/settings/", {**form, "enabled": ""}).status_code == 403
    assert JudgeSettings.objects.get().enabled


def test_each_pair_marks_the_differing_words_and_says_why_in_words(alice: Any, client_for: Any) -> None:
    personal = Palace.objects.get(personal_owner=alice)
    older, newer = "The checkout request timeout is 120 seconds.", "The checkout request timeout is 200 seconds."
    edge = contradiction(personal, alice, older, newer).edge.pk
    client = client_for(alice)
    page = client.get("/judge/").content.decode()
    block = page.split(f'id="edge-{edge}"')[1].split("</article>")[0]
    assert '<mark class="diff del">120</mark>' in block and '<mark class="diff ins">200</mark>' in block
    assert block.count("<mark") == 2  # only the words that differ
    assert "The rules found nearly the same sentence" in block and "with “200” instead of “120”." in block
    assert "The rules decided because the model judge is switched off." in block
    assert "rules (off): rules: similarity" in block  # the stored label stays, folded away
    assert 'name="reason"' in block and '<textarea id="judge-reason-' in block  # a field sized for a sentence
    zh = client.get("/judge/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").content.decode()
    assert "规则发现几乎相同的句子" in zh and "是“200”而不是“120”" in zh and "模型裁判已关闭" in zh
    assert ">暂缓</span>" in zh and "The rules found" not in zh  # the ruling chip too


def test_memory_text_is_shown_inert_in_the_marked_pair(alice: Any, client_for: Any, make_memory: Any) -> None:
    """No ruling kept (an edge made directly): the pair still shows, marked, and a "<script>" in a memory is text."""
    personal = Palace.objects.get(personal_owner=alice)
    a = make_memory(personal, 'Use <script>alert("x")</script> on port 8000 & not 9000.')
    b = make_memory(personal, 'Use <script>alert("x")</script> on port 8001 & not 9000.')
    Edge.objects.create(palace=personal, from_memory=b, to_memory=a, kind="contradicts", status="pending")
    page = client_for(alice).get("/judge/").content.decode()
    assert "<script>alert" not in page
    assert (
        'Use &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; on port <mark class="diff del">8000</mark> &amp; not'
        in page
    )
    assert '<mark class="diff ins">8001</mark>' in page  # positive control: the marks are real markup
    assert "No ruling was kept for this pair" in page


def test_readable_why_of_a_model_ruling_in_english_and_chinese() -> None:
    from types import SimpleNamespace

    from django.utils import translation

    from panel.contrast import contrast, raw_label, readable_why

    ruling = SimpleNamespace(
        model_took_part=True, model_name="judge-b", p_same=0.12, p_contradiction=0.91, similarity=0.95,
        fallback_reason="", reason="different ports",
    )  # fmt: skip
    shown = contrast("部署在周二。", "部署在周五。")
    assert shown.changes == (("二", "五"),)  # one CJK ideograph is one word
    with translation.override("en"):
        why = readable_why(ruling, shown.changes)
    assert why == (
        "The model judge-b judged that these contradict each other (91% sure; 12% that they say the same thing)."
        " What differs: “五” instead of “二”."
    )
    with translation.override("zh-hans"):
        assert readable_why(ruling, shown.changes) == (
            "模型 judge-b 判定二者相互矛盾（把握 91%；说的是同一件事的可能 12%）。 不同之处：是“五”而不是“二”。"
        )
    assert raw_label(ruling) == "model judge-b (0.12 / 0.91): different ports"
