"""The rule extractor: candidate facts found by documented patterns, in English and Chinese, without a model.

Precision over recall: a rule that fires should be right. A turn is cut into sentences (on . ! ? ; 。！？； and
line breaks; a Chinese sentence's clauses after a comma are tried too, since Chinese strings clauses with
commas); fenced code, indented code and quoted lines (``> …``) are removed first, and a sentence is skipped
when it is a question (ends in ? or ？, or a ZH question particle 吗/呢), a hypothetical (if, what if, suppose,
imagine, maybe, perhaps, might, could, unless, whether, in case; 如果, 假如, 要是, 假设, 万一, 也许, 或许, 是否,
要不要), looks like code (operators, braces, a shell prompt), or when its trigger stands inside quotes ("…", “…”,
「…」, 『…』, `…`). Each candidate is the clause, cleaned (leading fillers such as "ok so" dropped, first letter
capitalised, one final full stop), and must say something (at least three words, or four CJK characters) without
pointing back at the conversation at its end ("… for this").

The patterns (name: kind, confidence — triggers):

- ``prefer``: preference, 0.5 — "I prefer", "I'd prefer", "I'd rather", "I (really) like", "I love", "I don't
  like", "I dislike", "I hate", "my preference is" at the start; 我喜欢, 我更喜欢, 我比较喜欢, 我偏好, 我倾向于,
  我不喜欢 at the start. Not "I'd like" / "I would like" (a request), nor when the object points back into the
  conversation ("I like this", "I like your approach", 我喜欢这个).
- ``decided``: decision, 0.5 — "we decided", "we've decided", "I have decided", "we agreed", "the decision is";
  决定 after 我们/我/团队/大家 (with 之前/已经/最终/当时… between), 已经/最终/最后, or at the start (决定：…), not
  after 没/未/不/还没/你/由.
- ``go_with``: decision, 0.5 — "let's go with", "we'll go with", "we're going with", "let's stick with", "let's
  switch to"; 就用, 那就用 at the start, 就这么定了. Not when the object only points back (it, this, the second
  option, 这个).
- ``always_never``: preference, 0.5 — "always …" / "never …" as an instruction at the start of a sentence (after
  "please" too) or after "we" / "you should"; "don't ever"; 总是 / 永远不要 / 永远别 / 一律 / 不要再 at the start or
  after 请/我们/你要. Not "never mind", "almost never", "not always", 他总是….
- ``from_now_on``: preference, 0.5 — "from now on", "going forward", "henceforth", "in future" at the start;
  从现在开始, 从今以后, 以后…都 (以后提交信息都用英文写), 今后.
- ``remember``: fact, 0.6 — "remember that X", "remember: X", "remember, X", "please remember X", "don't forget
  that X", "keep in mind that X", "note that X" at the start; 记住 / 请记住 at the start (记住：X). The candidate is
  X. Not "do you remember", "I don't remember", "remember when", "remember to …", 你还记得吗, 记不住, 记住了吗.
- ``correction``: fact, 0.45 — "actually, X" at the start, "no, it's X" / "no, it is X" / "no, the X is Y",
  "correction: X", "to correct myself, X", "I meant X"; 不对，是X / 不对，应该是X, 更正：X, 更正一下，X, 纠正一下，X.
  The candidate is X, and it must state something (a verb of being, using, having; any Chinese clause) rather than
  narrate ("Actually, let me check"). Not "actually" inside a sentence, "no, thanks", "no, I don't know", 不对吗.

When a turn has more candidates than ``limit``, the most confident are kept (ties: the earlier), in text order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from capture.extraction.candidate import Candidate, Kind

MAX_CHARS = 280  # a longer "sentence" is a run-on paragraph, not a clean fact

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_FENCE = re.compile(r"^[ \t]*(```|~~~).*?(?:^[ \t]*\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_SPLIT = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|「[^」\n]*」|『[^』\n]*』|`[^`\n]*`")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_QUESTION = re.compile(r"[?？]\s*$|[吗呢嘛][。.!！]?\s*$")
_HYPOTHETICAL = re.compile(
    r"\b(?:if|what if|suppose|supposing|imagine|maybe|perhaps|might|could|unless|whether|in case|wonder)\b"
    r"|如果|假如|要是|假设|万一|也许|或许|是否|要不要|是不是",
    re.IGNORECASE,
)
# A sentence that cites what memory holds ("Memory says the team decided …", 根据记忆…) restates Atrium's own recall:
# reading it as a new fact would let memory reinforce itself (the anti-echo rule, capture.extraction.echo).
_CITES_MEMORY = re.compile(
    r"\b(?:memory|memories|atrium)\s+(?:says|said|shows|showed|mentions"
    r"|mentioned|has it|tells me|reminds me)\b"
    r"|\b(?:according to|per) (?:the |your |my )?(?:stored |saved |recalled )?(?:memory|memories|atrium)\b"
    r"|\brecalled memor(?:y|ies)\b"
    r"|(?:记忆|记忆库|Atrium)(?:里|中)?(?:说|显示|记录|记着|提到)|根据记忆|按记忆",
    re.IGNORECASE,
)
_CODE = re.compile(r"[{}<>]|==|=>|->|::|\w\(\)|^\s*[$#>%]\s|;\s*$|^\s*(?:def|class|import|return|const|let|var)\s")
_FILLER = re.compile(
    r"^(?:(?:ok(?:ay)?|so|well|hmm+|and|but|also|btw|oh|yes|yeah|alright|right|好的?|嗯|那么?|另外)[,，\s]+"
    r"|(?:另外|还有|对了)(?=[\u3400-\u9fff]))+",  # Chinese runs its connectives into the next word: 另外记住：…
    re.I,
)
# An object that points back into the conversation ("I like this", 就用这个): not a standalone fact.
_POINTER = re.compile(
    r"^(?:it|this|these|those|them|your|yours|how|what|you|the idea|the way|that(?=(?:\s+\S+){0,2}\s*[.!]?$)"
    r"|the (?:first|second|third|last|other|former|latter|same|above|previous)|option \w+\b)\b"
    r"|^(?:这个|那个|它|这样|那样|这种|那种|你的|你)",
    re.IGNORECASE,
)
# A clause that ends by pointing back ("… for this", "… like that") needs the conversation to make sense.
_POINTS_BACK = re.compile(r"\b(?:for|with|about|like|in|on) (?:this|that|it|these|those)[.!。！]?$", re.IGNORECASE)
# A correction must state something, not narrate ("Actually, let me check"): a verb of being, using or having.
_STATES = re.compile(
    r"\b(?:is|are|was|were|use|uses|used|run|runs|live|lives|should|must|need|needs|has|have|had|means|works|"
    r"points|belongs|called|named|goes|starts|ends|takes|moved|changed|switched|became|renamed)\b|'s\b|'re\b|[\u3400-\u9fff]",
    re.IGNORECASE,
)
_NARRATION = re.compile(r"^(?:let me|let's|I think|I'm not sure|I don't know|never mind|wait|hold on|thanks)\b", re.I)


@dataclass(frozen=True)
class Rule:
    name: str
    kind: Kind
    confidence: float
    trigger: re.Pattern[str]
    keep_trigger: bool  # the candidate is the sentence from the trigger on (True) or what follows it (False)


RULES: tuple[Rule, ...] = (
    Rule(
        "prefer",
        "preference",
        0.5,
        re.compile(
            r"^(?:(?:honestly|personally|generally)[,\s]+)?"
            r"(?:I(?:'d| would) (?:much |really |strongly )?(?:prefer|rather)"
            r"|I (?:really |much |strongly |generally |usually |always |also |still )?(?:prefer|like|love|dislike|hate)"
            r"|I (?:really )?(?:don't|do not) like|my preference is)\b"
            r"|^我(?:更|比较|还是更|一直|不太|不)?(?:喜欢|偏好|倾向于)",
            re.IGNORECASE,
        ),
        True,
    ),
    Rule(
        "decided",
        "decision",
        0.5,
        re.compile(
            r"\b(?:we|I|the team)(?:'ve| have| had)?(?: (?:already|finally|just|now|officially|all))? "
            r"(?:decided|agreed)\b|\bthe decision is\b"
            r"|(?:^|(?:我们|我|团队|大家)(?:之前|已经|最终|最后|当时|刚才|都)?|已经|最终|最后)(?<![没未不你由])决定(?!了吗|吗)",
            re.IGNORECASE,
        ),
        True,
    ),
    Rule(
        "go_with",
        "decision",
        0.5,
        re.compile(
            r"^(?:let's|let us|we'll|we will|we're|we are)(?: going to| gonna)? "
            r"(?:go with|stick with|stick to|switch to)\b"
            r"|^(?:那就|就|那我们就|我们就)用|就这么定了",
            re.IGNORECASE,
        ),
        True,
    ),
    Rule(
        "always_never",
        "preference",
        0.5,
        re.compile(
            r"^(?:(?:please|and|also)[,\s]+)*(?:(?:we|you) (?:should |must )?)?(?:always|never)\b(?! mind\b)"
            r"|^(?:please )?don't ever\b"
            r"|^(?:请|我们|你要|你|以后)?(?:总是|永远不要|永远别|一律|不要再|别再)",
            re.IGNORECASE,
        ),
        True,
    ),
    Rule(
        "from_now_on",
        "preference",
        0.5,
        re.compile(
            r"^(?:from now on|going forward|henceforth|in future|in the future)\b"
            r"|从现在开始|从今以后|以后[^，,。]{0,12}?都|今后",
            re.I,
        ),
        True,
    ),
    Rule(
        "remember",
        "fact",
        0.6,
        re.compile(
            r"^(?:please |also |and )?(?:remember(?: that|:)|remember,|don't forget(?: that|:)|keep in mind(?: that|:)"
            r"|note(?: that|:))\s*|^(?:please )?remember\s+(?=[A-Z0-9])"
            r"|^(?:请你?|你要|要)?记住(?![了吗])[：:，,\s]*",
            re.IGNORECASE,
        ),
        False,
    ),
    Rule(
        "correction",
        "fact",
        0.45,
        re.compile(
            r"^(?:actually|correction|to correct myself|sorry, I meant|I meant)\s*[,:]\s*"
            r"|^no[,.!]\s+(?=(?:it's|it is|it was|that's|that is|the)\b)"
            r"|^(?:不对|不是这样)[，,：:\s]*(?:应该是|其实是|是)\s*|^(?:更正|纠正)(?:一下)?[：:，,\s]+",
            re.IGNORECASE,
        ),
        False,
    ),
)


def rule_facts(text: str, *, limit: int) -> list[Candidate]:
    """The candidate facts the patterns find in ``text`` (module docstring), at most ``limit``, in text order."""
    if limit < 0:
        raise ValueError(f"limit must be at least 0, got {limit}")
    found: list[tuple[int, Candidate]] = []
    seen: set[str] = set()
    for position, sentence in enumerate(sentences(text)):
        candidate = _match(sentence)
        # Chinese strings clauses with commas: 用 httpx，不要用 requests，我更喜欢 httpx 的超时设置方式。 A trigger that
        # must open its sentence may open a clause after a comma; the candidate runs from there to the sentence's end.
        tails = (sentence[comma.end() :] for comma in re.finditer("，", sentence))
        clauses = candidate is None and re.search(f"[{_CJK}]", sentence) and not _ruled_out(sentence)
        while clauses and candidate is None and (tail := next(tails, None)) is not None:
            candidate = _match(tail.strip())
        if candidate is not None and candidate.content.casefold() not in seen:
            seen.add(candidate.content.casefold())
            found.append((position, candidate))
    best = sorted(found, key=lambda pair: (-pair[1].confidence, pair[0]))[:limit]
    return [candidate for _, candidate in sorted(best, key=lambda pair: pair[0])]


def sentences(text: str) -> list[str]:
    """The sentences a rule may read: code and quoted lines removed, bullets and fillers stripped."""
    kept_lines = [
        line
        for line in _FENCE.sub("", text).splitlines()
        if not line.lstrip().startswith(">") and not line.startswith(("    ", "\t"))
    ]
    out = []
    for piece in _SPLIT.split("\n".join(kept_lines)):
        sentence = _FILLER.sub("", _BULLET.sub("", piece.strip())).strip().rstrip(";；").strip()
        if sentence:
            out.append(sentence)
    return out


def _ruled_out(sentence: str) -> bool:
    """A question, a hypothetical, code, or a citation of memory: no rule reads it (nor, in Chinese, any clause
    of it)."""
    return bool(
        _QUESTION.search(sentence)
        or _HYPOTHETICAL.search(sentence)
        or _CODE.search(sentence)
        or _CITES_MEMORY.search(sentence)
    )


def _match(sentence: str) -> Candidate | None:
    if _ruled_out(sentence):
        return None
    masked = _QUOTED.sub(lambda m: "\x00" * len(m.group()), sentence)  # a trigger inside quotes is not the speaker's
    for rule in RULES:
        hit = rule.trigger.search(masked)
        if hit is None:
            continue
        rest = sentence[hit.end() :] if not rule.keep_trigger else sentence[hit.start() :]
        content = _clean(rest)
        object_part = sentence[hit.end() :].strip()
        if rule.name in ("prefer", "go_with") and (not object_part or _POINTER.match(object_part)):
            return None
        if _POINTS_BACK.search(content):
            return None
        if rule.name == "correction" and (not _STATES.search(content) or _NARRATION.match(content)):
            return None
        if _says_something(content):
            return Candidate(content=content, kind=rule.kind, pattern=rule.name, confidence=rule.confidence)
        return None
    return None


def _clean(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip().strip(",，:：;；-— ")
    text = _FILLER.sub("", text)
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    if re.search(rf"[{_CJK}]$", text):
        return text + "。"
    return text if text[-1] in ".!。！" else text + "."


def _says_something(content: str) -> bool:
    if not content or len(content) > MAX_CHARS:
        return False
    cjk = len(re.findall(rf"[{_CJK}]", content))
    words = len(re.findall(r"[A-Za-z0-9][\w'-]*", content))
    return cjk >= 4 or words >= 3 or (cjk >= 2 and words >= 1)
