"""Scrub inbound memory content before it is stored.

Two steps of the write pipeline live here (see DESIGN.md, "The write pipeline"):

1. :func:`strip_protocol_tags` removes forged copies of the tags that wrap recalled memories. Retrieval wraps every
   recall in ``<atrium_memory_context>`` and the live request in ``<current_user_request>``; if a saved body could
   carry those tags, a later recall could close our wrapper early and smuggle text in as "the current request"
   (second-order prompt injection).
2. :func:`redact` replaces secrets and personal data with ``[REDACTED:<type>]``. Only the type names leave this
   module, never the matched values, so the op log can say *what kind* of thing was scrubbed without becoming a
   second copy of it.

Both functions are pure: no Django, no settings, no I/O.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "PROTOCOL_TAG_NAMES",
    "REDACTION_TYPES",
    "RedactionResult",
    "redact",
    "strip_protocol_tags",
]

PROTOCOL_TAG_NAMES: tuple[str, ...] = ("atrium_memory_context", "current_user_request")
"""Tags that only the server may emit; they are removed from every stored body."""

REDACTION_TYPES: tuple[str, ...] = (
    "aws_access_key",
    "bearer_token",
    "github_token",
    "national_id_cn",
    "openai_key",
    "password",
    "phone_cn",
    "private_key",
)
"""Every type name :func:`redact` can report (for filters and admin choices)."""

_MARKER_PREFIX = "[REDACTED:"


def _marker(kind: str) -> str:
    return f"{_MARKER_PREFIX}{kind}]"


# --- protocol tags ---------------------------------------------------------------------------------------------

# C0 controls except \t and \n, plus DEL. They are invisible in every UI, can hide a tag from a naive matcher
# (``<atrium\x00_memory_context>``), and NUL cannot be stored in a PostgreSQL text column at all.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

# Invisible format characters an attacker can sprinkle inside a tag name so that a model still reads the tag but
# a literal matcher does not. Tolerated *inside* the name only; elsewhere they are left alone (ZWJ builds emoji).
_INVISIBLE = "\u00ad\u200b\u200c\u200d\u2060\ufeff"

# Angle brackets as they may reach us: raw, HTML-escaped (also double-escaped), numeric entities, and the
# full-width / small forms that render like brackets.
_OPEN = r"(?:<|&(?:amp;)*lt;|&#0*60;|&#x0*3c;|\uff1c|\ufe64)"
_CLOSE = r"(?:>|&(?:amp;)*gt;|&#0*62;|&#x0*3e;|\uff1e|\ufe65)"


def _lenient_name(name: str) -> str:
    """Pattern for a tag name that also accepts full-width letters and interleaved invisible characters."""
    parts = [f"[{re.escape(ch)}{chr(ord(ch) + 0xFEE0)}]" for ch in name]
    return f"[{_INVISIBLE}]*".join(parts)


# The tag body (attributes) is bounded and may not cross a newline or another bracket: a forged tag with no
# closing bracket is still removed up to that point, and a missing ``>`` can never make us swallow the rest of
# the memory.
_PROTOCOL_TAG = re.compile(
    rf"{_OPEN}\s*/?\s*(?:{'|'.join(_lenient_name(n) for n in PROTOCOL_TAG_NAMES)})(?!\w)"
    rf"(?:(?!{_OPEN}|{_CLOSE})[^\n]){{0,256}}{_CLOSE}?",
    re.IGNORECASE,
)


# Deleting a tag can splice the halves of an outer one together, so deletion repeats; honest text needs one pass
# and a nested forgery a few more. Past this many passes the input is an attack built to make the loop
# quadratic, and the remaining tags are defanged instead.
_MAX_DELETION_PASSES = 4
_DEFANGED_OPEN = "\u2039"  # ‹ : reads like a bracket, matches no opener


_OPEN_AT_START = re.compile(_OPEN, re.IGNORECASE)


def _defang(match: re.Match[str]) -> str:
    """Swap the tag's opening bracket (which the match starts with) for "‹"."""
    return _OPEN_AT_START.sub(_DEFANGED_OPEN, match.group(0), count=1)


def strip_protocol_tags(text: str) -> str:
    """Remove forged protocol tags and control characters, keeping the text between the tags.

    1. Normalise line endings to ``\\n`` (a lone ``\\r`` becomes a newline rather than gluing two lines) and drop
       the other control characters.
    2. Delete tags, repeating while a pass still finds some, because deleting one tag can splice the halves of
       an outer one together (``<atrium_<current_user_request>memory_context>``).
    3. If tags remain after a few passes, replace their opening bracket with "‹" in one final pass. That pass
       deletes nothing, so it cannot splice a new tag, and the work stays linear in the input size.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL_CHARS.sub("", text)
    for _ in range(_MAX_DELETION_PASSES):
        stripped = _PROTOCOL_TAG.sub("", text)
        if stripped == text:
            return stripped
        text = stripped
    return _PROTOCOL_TAG.sub(_defang, text)


# --- redaction -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RedactionResult:
    """Scrubbed text plus the sorted, unique names of what was scrubbed (never the values)."""

    text: str
    types: tuple[str, ...]


_Replacer = Callable[[re.Match[str]], str | None]
"""Returns the replacement for a match, or ``None`` to leave the match as it was."""


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    replace: _Replacer


def _whole(kind: str) -> _Replacer:
    def replace(_match: re.Match[str]) -> str:
        return _marker(kind)

    return replace


def _group(kind: str, group: str) -> _Replacer:
    """Replace only ``group``, keeping the surrounding context (a key, a scheme, quotes) readable."""

    def replace(match: re.Match[str]) -> str:
        start, end = match.span(group)
        whole_start = match.start()
        whole = match.group(0)
        return whole[: start - whole_start] + _marker(kind) + whole[end - whole_start :]

    return replace


# PEM private keys: the whole block. A block cut off before its END line (a truncated paste) is scrubbed to the
# end of the text rather than left half-visible.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
    r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
)

# OpenAI-style keys: sk-…, sk-proj-…, sk-ant-api03-… (Anthropic uses the same prefix). The left guard keeps
# "task-list" and "desk-lamp" out; 20+ key characters keep "sk-learn" out.
_OPENAI_KEY = re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}")

_GITHUB_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})(?![A-Za-z0-9_])"
)

_AWS_ACCESS_KEY = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")

# RFC 6750 token characters. After an ``Authorization:`` header any token is a secret; a bare "Bearer" word is
# ordinary English ("the bearer of bad news"), so there the token must also look machine-made (see below).
_BEARER_HEADER = re.compile(r"(?i:authorization)\s*[:=]\s*[\"']?(?i:bearer)\s+(?P<value>[A-Za-z0-9\-._~+/]+=*)")
_BEARER_BARE = re.compile(r"(?<![A-Za-z0-9])(?i:bearer)\s+(?P<value>[A-Za-z0-9\-._~+/]{16,}=*)")


def _looks_machine_made(value: str) -> bool:
    """True for random-looking tokens: a digit, a camel hump, or base64 punctuation. Prose words have none."""
    return bool(re.search(r"[0-9+/_=~]|[a-z][A-Z]", value))


def _bearer_bare(match: re.Match[str]) -> str | None:
    return _group("bearer_token", "value")(match) if _looks_machine_made(match.group("value")) else None


# Password-like assignments: ``key = value``, ``key: value``, ``"key": "value"``, ``--key value``.
# The key is matched broadly and then judged by its *last* word, so ``DB_PASSWORD`` and ``refresh_token`` count
# while ``password_policy`` (a setting about passwords) and ``max_tokens`` (a number) do not.
_SECRET_KEY_LAST_WORDS = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "secret",
        "token",
        "apikey",
        "credentials",
    }
)
_SECRET_KEY_LAST_PAIRS = frozenset({("api", "key"), ("secret", "key"), ("access", "key"), ("private", "key")})

_ASSIGNMENT = re.compile(
    r"(?<![\w.-])(?P<quote>[\"']?)(?P<key>[A-Za-z_][A-Za-z0-9_.-]{0,63})(?P=quote)"
    r"[ \t]*(?::=|=>|=|:|：)[ \t]*"
    r"(?P<value>\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|[^\s,;'\"&]+)"
)
# Long options (``--password hunter2``) are the one place a bare space acts as the separator.
_CLI_OPTION = re.compile(
    r"(?<![\w-])--(?P<key>[A-Za-z][A-Za-z0-9_-]{0,63})[ \t]+(?P<value>[^\s\"'-][^\s]*|\"[^\"\n]*\"|'[^'\n]*')"
)


def _key_words(key: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key)  # apiKey -> api_Key
    return [w for w in re.split(r"[_.\-]+", spaced.lower()) if w]


def _is_secret_key(key: str) -> bool:
    words = _key_words(key)
    if not words:
        return False
    if words[-1] in _SECRET_KEY_LAST_WORDS:
        return True
    return len(words) >= 2 and (words[-2], words[-1]) in _SECRET_KEY_LAST_PAIRS


def _redact_value(match: re.Match[str]) -> str | None:
    """Redact an assignment's value, keeping the key, the separator and any quotes around the value."""
    if not _is_secret_key(match.group("key")):
        return None
    value = match.group("value")
    quoted = len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]
    inner = value[1:-1] if quoted else value
    if not inner.strip() or inner.startswith(_MARKER_PREFIX):
        return None
    replaced = f"{value[0]}{_marker('password')}{value[-1]}" if quoted else _marker("password")
    start = match.start("value") - match.start()
    whole = match.group(0)
    return whole[:start] + replaced + whole[start + len(value) :]


# Chinese password assignments: 密码：xxx, 登录密码: xxx, 口令是xxx, 密钥为xxx. The value must be ASCII-printable:
# passwords are typed on a keyboard, while "密码是什么？" ("what is the password?") is a question, not a secret.
_PASSWORD_ZH = re.compile(r"(?:密码|口令|密钥|秘钥)\s*(?:是|为|：|:|=)\s*(?!\[REDACTED:)(?P<value>[!-~]+)")

# user:password@host inside a URL (database URLs are a common thing to "remember").
_URL_CREDENTIALS = re.compile(r"(?<=://)(?P<user>[^\s:/@]+):(?!\[REDACTED:)(?P<value>[^\s/@]+)(?=@)")

# Mainland mobile numbers, optionally +86 / 0086 / 86 and spaced as 3-4-4. Alphanumerics on either side mean the
# digits belong to something longer (an order number, a hash), so those are left alone.
_PHONE_CN = re.compile(r"(?<![0-9A-Za-z+])(?:(?:\+|00)86[ -]?|86)?1[3-9][0-9](?:[ -]?[0-9]{4}){2}(?![0-9A-Za-z])")

# 18-character resident ID: 6-digit region, YYYYMMDD birth date, 3-digit sequence, check digit or X.
_NATIONAL_ID_CN = re.compile(
    r"(?<![0-9A-Za-z])[1-9][0-9]{5}(?P<birth>(?:19|20)[0-9]{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01]))"
    r"[0-9]{3}[0-9Xx](?![0-9A-Za-z])"
)


def _national_id(match: re.Match[str]) -> str | None:
    """Require a real calendar date, so 20240231… order numbers stay. The check digit is deliberately not
    verified: a mistyped ID is still personal data, and a leak costs more than an extra marker."""
    birth = match.group("birth")
    try:
        dt.date(int(birth[:4]), int(birth[4:6]), int(birth[6:]))
    except ValueError:
        return None
    return _marker("national_id_cn")


# Order matters: whole blocks and vendor-prefixed tokens first, so that ``api_key=sk-…`` reports ``openai_key``
# (the assignment rule then sees a marker and leaves it), and numbers last.
_RULES: tuple[_Rule, ...] = (
    _Rule("private_key", _PRIVATE_KEY, _whole("private_key")),
    _Rule("openai_key", _OPENAI_KEY, _whole("openai_key")),
    _Rule("github_token", _GITHUB_TOKEN, _whole("github_token")),
    _Rule("aws_access_key", _AWS_ACCESS_KEY, _whole("aws_access_key")),
    _Rule("bearer_token", _BEARER_HEADER, _group("bearer_token", "value")),
    _Rule("bearer_token", _BEARER_BARE, _bearer_bare),
    _Rule("password", _URL_CREDENTIALS, _group("password", "value")),
    _Rule("password", _ASSIGNMENT, _redact_value),
    _Rule("password", _CLI_OPTION, _redact_value),
    _Rule("password", _PASSWORD_ZH, _group("password", "value")),
    _Rule("national_id_cn", _NATIONAL_ID_CN, _national_id),
    _Rule("phone_cn", _PHONE_CN, _whole("phone_cn")),
)


def redact(text: str) -> RedactionResult:
    """Replace secrets and personal data with ``[REDACTED:<type>]`` markers.

    Assignments keep their key (``password=[REDACTED:password]``) so the memory still says *that* a password
    was set, which is often the useful part. Running ``redact`` on its own output changes nothing.
    """
    found: set[str] = set()
    for rule in _RULES:
        text = _apply(rule, text, found)
    return RedactionResult(text=text, types=tuple(sorted(found)))


def _apply(rule: _Rule, text: str, found: set[str]) -> str:
    """Apply one rule. A match the rule declines (``note: token=…`` matched with the harmless key ``note``) must
    not hide a secret inside it, so scanning resumes one character later instead of after the whole match."""
    pieces: list[str] = []
    kept = scan = 0
    while scan <= len(text):
        match = rule.pattern.search(text, scan)
        if match is None:
            break
        replaced = rule.replace(match)
        if replaced is None:
            scan = match.start() + 1
            continue
        found.add(rule.kind)
        pieces += [text[kept : match.start()], replaced]
        kept = match.end()
        scan = match.end() if match.end() > match.start() else match.end() + 1
    pieces.append(text[kept:])
    return "".join(pieces)
