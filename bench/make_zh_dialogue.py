"""Build bench/zh-dialogue-dev.jsonl from the hand-written records and cues (deterministic: seed 27).

    uv run python bench/make_zh_dialogue.py > bench/zh-dialogue-dev.jsonl

One conversation per person. Memories: the person's dated third-person records (facts format; each record cites
itself as evidence). Questions: a dialogue between the person and an assistant, one "speaker: text" line per turn;
small talk first (mixed Chinese/English), then often a passing mention of another of the person's events (a
distractor), then the cue lines that recall the gold record(s) without naming them plainly, the user speaking last.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from zh_dialogue_people_a import LIN, MEI, ZHOU
from zh_dialogue_people_b import LI, WANG, ZHAO

ASSISTANT = "助手"
OPENERS = [
    "在吗？今天有点累",
    "hi，忙完了终于有空聊两句",
    "今天的meeting开得我头都大了",
    "刚下班，地铁上人好多",
    "最近deadline好多，感觉被掏空",
    "周末终于可以躺平了哈哈",
    "今天天气不错，出去溜达了一圈",
    "刚刷完手机，看到个有意思的post",
    "我发现最近记性越来越差了",
    "你说人是不是年纪大了就爱回忆过去",
    "今天跟朋友喝了杯咖啡，聊了好多以前的事",
    "OK 我来整理一下最近的事情",
    "早上起晚了，差点迟到",
    "刚看完一个vlog，突然想起些事",
    "在做年终总结，要把今年的事过一遍",
    "emmm 有个事想问问你",
    "我在写日记，有些细节想不起来了",
    "刚跟家里打完电话",
]
ACKS = [
    "嗯嗯，我在呢",
    "辛苦啦，慢慢说",
    "哈哈，可以理解",
    "好呀，你说",
    "听起来挺充实的",
    "是嘛，然后呢？",
    "没问题，我帮你想想",
    "嗯，我记得你之前提过一些",
    "OK，你具体想问哪件？",
    "别急，一件一件来",
]
ASIDES = [
    "不过那个先不说了",
    "算了，这个不重要",
    "扯远了哈哈",
    "那是另一回事",
]
ASKS = ["你帮我想想？", "你还记得吗？", "帮我回忆一下", "有印象吗？"]


def _dialogue(rng: random.Random, user: str, cue: list[str], distractors: list[list[str]]) -> str:
    turns: list[tuple[str, str]] = []
    for line in rng.sample(OPENERS, rng.randint(1, 3)):
        turns += [(user, line), (ASSISTANT, rng.choice(ACKS))]
    for other in distractors:
        turns += [(user, other[0]), (ASSISTANT, rng.choice(ACKS)), (user, rng.choice(ASIDES))]
        turns.append((ASSISTANT, rng.choice(ACKS)))
    turns.append((user, cue[0]))
    if len(cue) > 1:
        turns += [(ASSISTANT, rng.choice(ACKS)), (user, cue[1])]
    else:
        turns += [(ASSISTANT, "你说的是哪次？"), (user, rng.choice(ASKS))]
    while len(turns) < 6:
        turns[:0] = [(user, rng.choice(OPENERS)), (ASSISTANT, rng.choice(ACKS))]
    return "\n".join(f"{speaker}: {text}" for speaker, text in turns[-20:])


def _conversation(person: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    records = person["records"]
    memories = [
        {"id": f"{person['id']}-{i:02d}", "text": text, "session_time": date, "evidence": [f"{person['id']}-{i:02d}"]}
        for i, (date, text, _) in enumerate(records)
    ]
    cues = {i: [c for c in cue if c] for i, (_, _, cue) in enumerate(records) if cue}
    asks: list[tuple[list[str], list[int], int]] = [(cue, [i], 4) for i, cue in cues.items()]
    asks += [([c for c in cue if c], list(gold), 1) for cue, gold in person.get("multi", [])]
    questions = []
    for n, (cue, gold, category) in enumerate(asks):
        others = [c for i, c in cues.items() if i not in gold]
        distractors = rng.sample(others, min(len(others), rng.choice([0, 1, 1, 2])))
        questions.append(
            {
                "id": f"{person['id']}:q{n}",
                "question": _dialogue(rng, person["user"], cue, distractors),
                "evidence": [memories[i]["id"] for i in gold],
                "category": category,
                "category_name": "multi-hop" if category == 1 else "single-hop",
            }
        )
    return {"conversation_id": person["id"], "memories": memories, "questions": questions}


def main() -> None:
    rng = random.Random(27)
    for person in (LIN, MEI, ZHOU, WANG, ZHAO, LI):
        sys.stdout.write(json.dumps(_conversation(person, rng), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
