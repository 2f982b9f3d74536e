"""Episode condensing: a long turn's gist, deterministic (the same text always gives the same episode).

An episode is the turn itself when it fits ``limit``. A longer turn is condensed in steps, stopping as soon as it
fits:

1. fenced code blocks become ``[code: N lines elided]`` and runs of log-like lines (stack traces, timestamps and
   levels, shell prompts, deep indentation, lines with few letters) ``[log: N lines elided]``: tool output and code
   are never stored verbatim, and they are what makes a turn long;
2. the gist: the first sentences, then the key lines (questions, decisions and preferences, errors, headings and
   list items), in their order, joined by `` … ``, cut to ``limit`` on a word.
"""

from __future__ import annotations

import re

from memory.text import truncate_to_chars

_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_LOG_LINE = re.compile(
    r"""^(?:\s*(?:at\ |File\ "|Traceback\ |\$\ |>>>\ |\+\ |-\ -|\#\ \d)   # traces, prompts
    |\s*\[?\d{4}-\d{2}-\d{2}[T\ ]\d{2}:\d{2}                              # timestamps
    |\s*\[?(?:DEBUG|INFO|WARN|WARNING|ERROR|FATAL|TRACE)\b                # levels
    |\s*\d{2}:\d{2}:\d{2}
    |\s*[\w./-]+\.\w+:\d+                                                 # path:line
    |\ {4,}\S|\t+\S)                                                      # deep indentation
    """,
    re.VERBOSE,
)
_MIN_LOG_RUN = 4
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")
_KEY_LINE = re.compile(
    r"""(\?|？|\b(?:decid|prefer|always|never|remember|must|should|error|fail|bug|fix|todo|because)
    |决定|喜欢|总是|永远|记住|必须|应该|错误|失败|修复|因为|^\s*(?:[#>*-]|\d+[.)])\s)""",
    re.VERBOSE | re.IGNORECASE,
)
GAP = " … "


def condense_episode(text: str, *, limit: int = 600) -> str:
    """``text`` if it fits ``limit`` characters (whitespace tidied), else its gist in at most ``limit`` characters
    (module docstring)."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    tidy = _tidy(text)
    if len(tidy) <= limit:
        return tidy
    elided = _tidy(_elide_logs(_FENCE.sub(_code_marker, text)))
    if len(elided) <= limit:
        return elided
    return _gist(elided, limit=limit)


def _tidy(text: str) -> str:
    lines = [line.rstrip() for line in text.strip().splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines))


def _code_marker(match: re.Match[str]) -> str:
    lines = len(match.group(2).rstrip("\n").splitlines())
    return f"[code: {lines} lines elided]\n"


def _is_log(line: str) -> bool:
    if _LOG_LINE.match(line):
        return True
    letters = sum(ch.isalpha() for ch in line)
    return len(line) >= 20 and letters < len(line) * 0.4


def _elide_logs(text: str) -> str:
    out: list[str] = []
    run: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.strip() and _is_log(line):
            run.append(line)
            continue
        if len(run) >= _MIN_LOG_RUN:
            out.append(f"[log: {len(run)} lines elided]")
        else:
            out += run
        run = []
        out.append(line)
    return "\n".join(out[:-1])


def _gist(text: str, *, limit: int) -> str:
    """The first sentences (up to half the budget), then key lines in order while they fit, cut on a word."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    head_budget = max(limit // 2, 1)
    head: list[str] = []
    used = 0
    consumed = 0  # lines whose text is in the head
    for index, line in enumerate(lines):
        for sentence in _SENTENCE_END.split(line):
            if sentence and used + len(sentence) + 1 <= head_budget:
                head.append(sentence)
                used += len(sentence) + 1
            elif sentence:
                break
        else:
            consumed = index + 1
            continue
        break
    if not head:  # the first sentence alone is longer than half the budget
        return truncate_to_chars(_one_line(lines[0]), limit)
    parts = [" ".join(head)]
    size = len(parts[0])
    for line in lines[consumed:]:
        if not _KEY_LINE.search(line) or line.startswith(("[code:", "[log:")):
            continue
        if size + len(GAP) + len(line) > limit - len(GAP):
            break
        parts.append(line)
        size += len(GAP) + len(line)
    gist = GAP.join(parts)
    omitted = consumed < len(lines)
    return truncate_to_chars(gist + (GAP.rstrip() if omitted else ""), limit)


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()
