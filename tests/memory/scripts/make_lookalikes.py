"""Print the look-alike table that `memory.text.redaction` folds protocol-tag characters with (run by hand).

    uv pip install --target /tmp/ch confusable-homoglyphs==3.3.1
    uv run python tests/memory/scripts/make_lookalikes.py /tmp/ch/confusable_homoglyphs/confusables.json

The source is Unicode's confusables.txt (UTS #39) as shipped in that package's JSON. Only the characters the
protocol tags are spelled with are kept, and only non-ASCII sources that NFKD + case folding do not already turn
into the target, so the table stays a few hundred characters and the package is not a run-time dependency.
Paste the output over `_LOOKALIKES` in memory/text/protocol_tags.py.
"""

from __future__ import annotations

import json
import sys
import unicodedata

TARGETS = sorted(set("atrium_memory_context" + "current_user_request") | set("<>/-_"))


def basic_fold(ch: str) -> str:
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", ch).casefold())
    return "".join(c for c in text if unicodedata.category(c) not in ("Mn", "Me", "Cf"))


def main(path: str) -> None:
    with open(path, encoding="utf-8") as source:
        data: dict[str, list[dict[str, str]]] = json.load(source)
    clean = {k.strip("\u200e\u200f"): [e["c"].strip("\u200e\u200f") for e in v] for k, v in data.items()}
    table: dict[str, set[str]] = {t: set() for t in TARGETS}
    for target in TARGETS:
        for spelling in {target, target.upper()}:
            sources = set(clean.get(spelling, []))
            sources |= {key for key, glyphs in clean.items() if spelling in glyphs}
            for source in sources:
                if len(source) != 1 or source.isascii():
                    continue
                folded = basic_fold(source)
                if len(folded) == 1 and not folded.isascii():
                    table[target].add(folded)
    # A character that looks like two targets (Greek sigma: "c" and "o") stays in both classes.
    print("_LOOKALIKES: dict[str, str] = {")
    for target in TARGETS:
        chars = "".join(sorted(table[target]))
        escaped = "".join(c if unicodedata.category(c)[0] in "LNPS" else f"\\u{ord(c):04x}" for c in chars)
        print(f'    "{target}": "{escaped}",')
    print("}")


if __name__ == "__main__":
    main(sys.argv[1])
