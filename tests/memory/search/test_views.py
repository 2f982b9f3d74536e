"""What each arm reads of a dialogue query (memory.search.views), and the fusion weight per query (rank)."""

from __future__ import annotations

from memory.search import ranking_constants, tuned
from memory.search.rank import semantic_weight
from memory.search.views import dialogue_turns, query_views

DIALOGUE = "\n".join(
    [
        "小林: 在吗？今天的meeting开得我头都大了",
        "助手: 辛苦啦，慢慢说",
        "小林: 我那张打球的卡是多少钱办的？",
        "助手: 你说的是哪次？",
        "小林: 去年秋天跟同事跑去西湖那边见客户",
        "助手: 嗯嗯",
        "小林: 对方是做什么产品的？",
    ]
)


def test_a_dialogue_is_recognised_and_a_question_is_not() -> None:
    turns = dialogue_turns(DIALOGUE)

    assert turns is not None and len(turns) == 7
    assert turns[-1] == "对方是做什么产品的？"  # the speaker label is dropped
    assert dialogue_turns("What did Caroline do at the LGBTQ support group?") is None
    assert dialogue_turns("a: b\nc: d") is None  # too short to be a conversation
    assert dialogue_turns("note: one\nplain line\nanother plain line\nmore: x") is None  # mostly not turns
    # Speaker labels with a space inside, as exports name them ("Speaker A", "User 1"), are labels too.
    spaced = dialogue_turns("Speaker A: hi\nSpeaker B: hello there\nSpeaker A: where did we park the deploy key?")
    assert spaced == ["hi", "hello there", "where did we park the deploy key?"]


def test_the_semantic_arm_embeds_the_tail_and_a_question_stays_as_given() -> None:
    with tuned(TAIL_TURNS=3, VIEW_MIX=0.0, LEX_TAIL_TURNS=0):
        views = query_views(DIALOGUE)
        plain = query_views("When did Melanie paint a sunrise?")

    assert views.semantic == [("去年秋天跟同事跑去西湖那边见客户\n嗯嗯\n对方是做什么产品的？", 1.0)]
    assert views.lexical == DIALOGUE and views.turns == 7
    assert plain.semantic == [("When did Melanie paint a sunrise?", 1.0)] and plain.turns == 0


def test_the_tail_keeps_within_its_characters_but_always_the_last_turn() -> None:
    with tuned(TAIL_TURNS=20, TAIL_CHARS=13):
        views = query_views(DIALOGUE)

    assert views.semantic[0][0] == "嗯嗯\n对方是做什么产品的？"
    with tuned(TAIL_TURNS=20, TAIL_CHARS=1):
        assert query_views(DIALOGUE).semantic[0][0] == "对方是做什么产品的？"


def test_a_dialogue_weighs_the_semantic_arm_at_its_own_weight() -> None:
    cosines, lexicals = [0.9, 0.8, 0.8, 0.8], [1.0, 0.9, 0.9, 0.9]
    shipped = ranking_constants()

    with tuned(SEMANTIC_WEIGHT=0.55, DIALOGUE_SEMANTIC_WEIGHT=0.8, FUSION_ADAPT=0.0):
        assert semantic_weight(cosines, lexicals) == 0.55
        assert semantic_weight(cosines, lexicals, dialogue=True) == 0.8
    # Adaptive: the arm whose best candidate stands out more gains weight.
    with tuned(SEMANTIC_WEIGHT=0.5, FUSION_ADAPT=0.4):
        peaked_semantic = semantic_weight([0.95, 0.7, 0.7, 0.7], [0.5, 0.5, 0.5, 0.49])
        peaked_lexical = semantic_weight([0.71, 0.7, 0.7, 0.7], [1.0, 0.1, 0.1, 0.1])
    assert round(peaked_semantic, 6) == 0.9  # 0.5 + 0.4 * (1 - 0): the cosine stands out, ts_rank is flat
    assert round(peaked_lexical, 6) == 0.18  # 0.5 + 0.4 * (0.1 - 0.9): 0.01 apart is 0.1 of COSINE_SPREAD
    assert ranking_constants() == shipped
