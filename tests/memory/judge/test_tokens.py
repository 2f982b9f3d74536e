"""The disposition rules' tokenizer: which tokens start a sentence (a capitalised word there is not a name), the
same as the definition it replaced (the stripped text before each token ends a sentence, or is empty), now linear in
the text and cached."""

from __future__ import annotations

import re

from memory.judge.dispositions import _TOKEN, _normalise, _tokens, key_tokens

_OLD_END = re.compile(r"[.!?。！？]\s*$")


def _old(text: str) -> list[tuple[str, bool]]:
    text = _normalise(text)
    out = []
    for match in _TOKEN.finditer(text):
        before = text[: match.start()].rstrip()
        out.append((match.group(0), not before or bool(_OLD_END.search(before))))
    return out


def test_sentence_starts_match_the_definition_they_replaced() -> None:
    texts = [
        "Mara owns billing. Jonas owns search! Does Priya? Yes.",
        "  Leading spaces. Then\tTabs\n\nAnd New lines.\u3000Ideographic space",
        "记住：Redis 的端口是 6380。下次 Mara 会检查！然后 Jonas。",
        "The v2.1 API ends with a dot. Next sentence… still going",
        "",
        "...",
        "Ends with a sentence end. ",
        "A\u2028B. C\x1cD? E",
    ]
    for text in texts:
        assert list(_tokens(text)) == _old(text), text
    # a capitalised word starting a sentence is not a name; one mid-sentence is
    assert key_tokens("Mara owns billing. Jonas reviews it on Thursday.") == {"thursday"}
