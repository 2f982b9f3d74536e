"""Redact secrets and personal data from inbound text before it is stored (step 2 of the write pipeline, DESIGN.md).

:func:`redact` replaces secrets and personal data with ``[REDACTED:<type>]``. Only the type names leave this module,
never the matched values, so the op log can say *what kind* of thing was scrubbed without becoming a second copy of
it. Every rule scans the text once, so the cost is linear in its length. Forged protocol tags are stripped before
(memory/text/cleaning.py: ``scrub_inbound_text`` is both steps). All functions here are pure: no Django, no settings,
no I/O.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["REDACTION_TYPES", "RedactionResult", "redact"]


REDACTION_TYPES: tuple[str, ...] = (
    "atrium_token",
    "aws_access_key",
    "basic_auth",
    "bearer_token",
    "card_number",
    "date_of_birth",
    "email",
    "github_token",
    "gitlab_token",
    "google_api_key",
    "huggingface_token",
    "jwt",
    "national_id_cn",
    "npm_token",
    "openai_key",
    "password",
    "phone_cn",
    "private_key",
    "slack_token",
    "ssn",
    "stripe_key",
)
"""Every type name :func:`redact` can report (for filters and admin choices)."""

_MARKER_PREFIX = "[REDACTED:"


def _marker(kind: str) -> str:
    return f"{_MARKER_PREFIX}{kind}]"


# --- redaction -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RedactionResult:
    """Scrubbed text plus the sorted, unique names of what was scrubbed (never the values)."""

    text: str
    types: tuple[str, ...]


_Edit = tuple[int, int, str]
"""``(start, end, replacement)``: the span of the scanned text to replace. It may reach past the match (a
key-value rule matches only the key and reads the value itself)."""

_Replacer = Callable[[re.Match[str]], _Edit | None]
"""Returns the edit for a match, or ``None`` to leave the text as it was (the rule declines the match)."""


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    replace: _Replacer


def _whole(kind: str) -> _Replacer:
    def replace(match: re.Match[str]) -> _Edit:
        return match.start(), match.end(), _marker(kind)

    return replace


def _group(kind: str, group: str = "value") -> _Replacer:
    """Replace only ``group``, keeping the surrounding context (a key, a scheme, quotes) readable."""

    def replace(match: re.Match[str]) -> _Edit | None:
        if match.group(group).startswith(_MARKER_PREFIX):
            return None
        return match.start(group), match.end(group), _marker(kind)

    return replace


def _looks_machine_made(value: str) -> bool:
    """True for random-looking tokens: a digit, a camel hump, or base64 punctuation. Prose words have none."""
    return bool(re.search(r"[0-9+/_=~]|[a-z][A-Z]", value))


def _line_before(match: re.Match[str], span: int = 120) -> str:
    """Up to ``span`` characters before the match on its own line: the command a flag belongs to."""
    text, start = match.string, match.start()
    line_start = text.rfind("\n", max(0, start - span), start) + 1
    return text[max(line_start, start - span) : start]


# PEM private keys: the whole block. A block cut off before its END line (a truncated paste) is scrubbed to the
# end of the text rather than left half-visible.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
    r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
)

# Vendor-prefixed tokens. The left guard keeps the prefix from matching inside a longer word ("task-list",
# "desk-lamp"), the minimum length keeps documentation of the prefix itself ("sk-learn", "ghp_short") readable.
# OpenAI-style keys: sk-…, sk-proj-…, sk-ant-api03-… (Anthropic uses the same prefix).
_OPENAI_KEY = re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}")
# Secret and restricted keys; publishable keys (pk_…) are public by design.
_STRIPE_KEY = re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}")
_GITHUB_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})(?![A-Za-z0-9_])"
)
_GITLAB_TOKEN = re.compile(r"(?<![A-Za-z0-9_-])gl(?:pat|dt|rt|cbt|ptt|ft|imt|agent)-[A-Za-z0-9_-]{20,}")
_SLACK_TOKEN = re.compile(r"(?<![A-Za-z0-9_-])xox[abposr]-[A-Za-z0-9-]{10,}")
_GOOGLE_API_KEY = re.compile(r"(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])")
_HUGGINGFACE_TOKEN = re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9_])")
_NPM_TOKEN = re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9_])")
# Atrium's own API tokens: "atr_" + token_urlsafe(32) (api/tokens.py).
_ATRIUM_TOKEN = re.compile(r"(?<![A-Za-z0-9_-])atr_[A-Za-z0-9_-]{20,}")
_AWS_ACCESS_KEY = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")

# RFC 6750 token characters. After an ``Authorization:`` header any token is a secret; a bare "Bearer" word is
# ordinary English ("the bearer of bad news"), so there the token must also look machine-made.
_BEARER_HEADER = re.compile(r"(?i:authorization)\s*[:=]\s*[\"']?(?i:bearer)\s+(?P<value>[A-Za-z0-9\-._~+/]+=*)")
_BEARER_BARE = re.compile(r"(?<![A-Za-z0-9])(?i:bearer)\s+(?P<value>[A-Za-z0-9\-._~+/]{16,}=*)")


def _bearer_bare(match: re.Match[str]) -> _Edit | None:
    return _group("bearer_token")(match) if _looks_machine_made(match.group("value")) else None


# HTTP Basic credentials are base64("user:password"); "Authorization: Basic is not used here" is prose.
_BASIC_HEADER = re.compile(r"(?i:authorization)\s*[:=]\s*[\"']?(?i:basic)\s+(?P<value>[A-Za-z0-9+/]{4,}=*)")


def _basic_auth(match: re.Match[str]) -> _Edit | None:
    value = match.group("value")
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if b":" in decoded or (len(value) >= 12 and _looks_machine_made(value)):
        return _group("basic_auth")(match)
    return None


# A JWT outside a header: base64url header (always '{"' -> "eyJ"), payload, signature (empty when unsigned).
_JWT = re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")

# user:password@host inside a URL (database URLs are a common thing to "remember"). The user may be empty
# (``redis://:pw@host``) and the password may itself contain "@": the last "@" before the path ends it.
_URL_CREDENTIALS = re.compile(r"(?<=://)(?P<user>[^\s:/@]{0,256}):(?P<value>[^\s/]+)@")


# --- key-value rules: the pattern matches only the key and separator; the value is read after acceptance ------
#
# A declined key (``note:``) therefore never hides a secret behind it (``note: token=…``), and a scan can resume
# right after the key: no character is examined twice, which keeps these rules linear on input such as "a=a=a=…".

# The key is matched broadly and then judged by its *last* word, so ``DB_PASSWORD`` and ``refresh_token`` count
# while ``password_policy`` (a setting about passwords) and ``max_tokens`` (a number) do not. A last word that
# only *ends* in "password" counts too (``PGPASSWORD``, ``rootpassword``).
_SECRET_KEY_LAST_WORDS = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "passcode",
        "pass",
        "pwd",
        "pw",
        "secret",
        "token",
        "apikey",
        "credential",
        "credentials",
    }
)
_SECRET_KEY_SUFFIXES = ("password", "passwd", "passphrase")
_SECRET_KEY_LAST_PAIRS = frozenset(
    {
        ("api", "key"),
        ("secret", "key"),
        ("access", "key"),  # also Azure SharedAccessKey
        ("private", "key"),
        ("account", "key"),  # Azure storage AccountKey
        ("signing", "key"),
        ("encryption", "key"),
        ("master", "key"),
    }
)


def _key_words(key: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key)  # apiKey -> api_Key
    return [w for w in re.split(r"[_.\-]+", spaced.lower()) if w]


def _is_secret_key(key: str) -> bool:
    words = _key_words(key)
    if not words:
        return False
    last = words[-1]
    if last in _SECRET_KEY_LAST_WORDS or last.endswith(_SECRET_KEY_SUFFIXES):
        return True
    return len(words) >= 2 and (words[-2], last) in _SECRET_KEY_LAST_PAIRS


# Every secret key ends in one of these (password, passwd, pwd, passphrase, passcode, pass, pw, secret, token,
# apikey/api_key, credential(s)). Checked inside the pattern, it spares a Python call for each of the many
# harmless keys in configuration text; :func:`_is_secret_key` still makes the decision.
_SECRET_KEY_END = (
    "(?i:"
    + "|".join(
        f"(?<={end})" for end in ("word", "wd", "phrase", "code", "pass", "pw", "ret", "ken", "key", "tial", "tials")
    )
    + ")"
)

# ``key = value``, ``key: value``, ``"key": "value"``, ``key == "value"``. Whitespace around the separator is
# bounded so that a declined key stays a short match.
_ASSIGNMENT = re.compile(
    rf"(?<![\w.-])(?P<quote>[\"']?)(?P<key>[A-Za-z_][A-Za-z0-9_.-]{{0,63}}+){_SECRET_KEY_END}(?P=quote)"
    r"[ \t]{0,32}(?P<sep>==|:=|=>|=|:|：)[ \t]{0,32}"
)
# Long options: ``--password hunter2``, ``--password=hunter2``.
_CLI_OPTION = re.compile(
    rf"(?<![\w-])--(?P<key>[A-Za-z][A-Za-z0-9_-]{{0,63}}+){_SECRET_KEY_END}(?P<sep>=|[ \t]{{1,8}})"
)

# A value: quoted (to the closing quote, or to the end of the line when the quote is never closed, which is a
# truncated secret, not a reason to keep it) or a bare run up to whitespace. ``,``, ``;`` and ``&`` end a bare
# value only where they separate it from what follows: before whitespace, the end, or the next ``key=`` (a query
# string, a connection string). Inside a value they are part of the secret: ``PGPASSWORD=Tr0ub4dor&3xyz`` is one
# password, and stopping at its ``&`` stored the tail in the clear. The look-ahead is bounded, so each character
# is still examined a bounded number of times.
_VALUE_SEPARATOR_ENDS = r"(?![ \t\r\n]|\Z|[A-Za-z_][A-Za-z0-9_.-]{0,63}[ \t]{0,8}[=:])"
_VALUE = re.compile(
    r"(?P<quote>[\"'`])(?P<inner>(?:(?!(?P=quote))[^\\\n]|\\.)*+)(?:(?P=quote)|(?=\n)|\Z)"
    rf"|(?P<bare>(?:[^\s,;'\"`&]|[,;&]{_VALUE_SEPARATOR_ENDS})++)"
)
# After a plain word, sentence punctuation may come before the next word ("secret: first, create a new one").
_NEXT_WORD = re.compile(r"[,;:.!?)]?[ \t]+[^\W\d_]")
# A list marker after a prose separator opens a list ("rotate the webhook secret: 1) create a new one, 2) …"); it
# is not the value. Markers are short: a number or letter with ")" or ".", one in brackets, "#1", or a bullet. A
# real value after the colon is a token-like string and never one of these.
_LIST_MARKER = re.compile(r"(?:\d{1,2}|[A-Za-z])[.)]|\((?:\d{1,2}|[A-Za-z])\)|#\d{1,2}|[-*•·–—>]")


def _is_plain_word(value: str) -> bool:
    """A dictionary-looking word: letters only (trailing sentence punctuation aside), no inner capital."""
    word = value.rstrip(".!?:)")
    return word.isalpha() and not any(ch.isupper() for ch in word[1:])


def _value_edit(text: str, at: int, *, prose_separator: bool) -> _Edit | None:
    """Redact the value that starts at ``at``, keeping any quotes around it.

    After a colon or a space (``password: update the secret in Vault``, ``the --password flag is…``) an English
    sentence or a list can follow the key, so a plain word followed by another word, or a list marker (``1)``),
    is taken for prose and kept. After
    ``=`` (configuration syntax) any value is a secret.
    """
    value = _VALUE.match(text, at)
    if value is None:
        return None
    group = "inner" if value.group("quote") else "bare"
    start, end = value.span(group)
    inner = value.group(group)
    if not inner.strip() or inner.startswith(_MARKER_PREFIX):
        return None
    if group == "bare" and prose_separator:
        if _LIST_MARKER.fullmatch(inner):
            return None
        if _is_plain_word(inner) and _NEXT_WORD.match(text, end):
            return None
    return start, end, _marker("password")


def _assignment(match: re.Match[str]) -> _Edit | None:
    if not _is_secret_key(match.group("key")):
        return None
    prose = match.group("sep") in (":", "：")
    return _value_edit(match.string, match.end(), prose_separator=prose)


def _cli_option(match: re.Match[str]) -> _Edit | None:
    if not _is_secret_key(match.group("key")):
        return None
    spaced = match.group("sep") != "="
    if spaced and match.string.startswith("-", match.end()):  # ``--password --user root``: a flag, no value
        return None
    return _value_edit(match.string, match.end(), prose_separator=spaced)


# MySQL-family clients take the password glued to ``-p`` (``mysql -u root -pS3cret``). Elsewhere ``-p`` is a
# port (``ssh -p2222``) or a compiler flag (``-pthread``), so the command must appear earlier on the same line.
_GLUED_P = re.compile(r"(?<!\S)-p(?P<value>\"[^\"\n]*+\"|'[^'\n]*+'|[^\s\"'-]\S*+)")
_MYSQL_COMMAND = re.compile(r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow|mariadb\S*)\b")


def _glued_p(match: re.Match[str]) -> _Edit | None:
    if not _MYSQL_COMMAND.search(_line_before(match)):
        return None
    return _value_edit(match.string, match.start("value"), prose_separator=False)


# ``curl -u user:password`` (also ``-uuser:pw``, ``--user=user:pw``). Other tools use ``-u user:group``
# (``docker run -u 1000:1000``), so curl must appear earlier on the same line.
_USER_OPTION = re.compile(r"(?<!\S)(?:-u|--user)(?:[ \t]{1,8}|=)?[\"']?(?P<user>[^\s:\"']{1,128}):(?P<value>[^\s\"']+)")
_CURL_COMMAND = re.compile(r"\bcurl\b")


def _user_option(match: re.Match[str]) -> _Edit | None:
    if not _CURL_COMMAND.search(_line_before(match)):
        return None
    return _group("password")(match)


# Passwords told in a sentence: "The staging database password is hunter2", "set the password for staging to
# …". Prose about passwords is common ("the password is required", "the token is valid for 24h"), so the value
# must look like a secret: quoted, or with a digit and a letter, a symbol or an inner capital, 6+ characters
# (a PIN: 4+ digits).
_SECRET_IN_PROSE = re.compile(
    r"\b(?P<what>(?i:password|passwd|passphrase|passcode|pwd|pin|secret|token|api[ _-]?key))\b"
    r"(?:[ \t]+(?i:for|of|on|at)(?:[ \t]+[^\s.,;:!?=]{1,40}){1,4}?)?"
    r"[ \t]+(?i:is|was|to)[ \t]+(?i:now[ \t]+|still[ \t]+)?"
)
_PROSE_VALUE = re.compile(r"(?P<quote>[\"'`]?)(?P<inner>[^\s\"'`]{1,200})(?P=quote)")


def _looks_like_secret(value: str, *, quoted: bool, pin: bool) -> bool:
    if pin:
        return len(value) >= 4 and value.isdigit()
    if quoted:
        return len(value) >= 4
    if len(value) < 6:
        return False
    has_digit = any(ch.isdigit() for ch in value)
    has_letter = any(ch.isalpha() for ch in value)
    return (
        value.isdigit()
        or (has_digit and has_letter)
        or bool(re.search(r"[!@#$%^&*+=~/\\|<>]", value))
        or bool(re.search(r"[a-z][A-Z]", value))
    )


def _secret_in_prose(match: re.Match[str]) -> _Edit | None:
    value = _PROSE_VALUE.match(match.string, match.end())
    if value is None:
        return None
    quoted = bool(value.group("quote"))
    inner = value.group("inner") if quoted else value.group("inner").rstrip(".,;:!?)")
    pin = match.group("what").lower() == "pin"
    if inner.startswith(_MARKER_PREFIX) or not _looks_like_secret(inner, quoted=quoted, pin=pin):
        return None
    start = value.start("inner")
    return start, start + len(inner), _marker("password")


# Chinese password assignments: 密码：xxx, 登录密码: xxx, 口令是xxx, 密钥为xxx. The value must be ASCII-printable:
# passwords are typed on a keyboard, while "密码是什么？" ("what is the password?") is a question, not a secret.
_PASSWORD_ZH = re.compile(r"(?:密码|口令|密钥|秘钥)\s*(?:是|为|：|:|=)\s*(?!\[REDACTED:)(?P<value>[!-~]+)")


# --- personal data ---------------------------------------------------------------------------------------------

# Mainland mobile numbers, optionally +86 / 0086 / 86 and spaced as 3-4-4. Alphanumerics on either side mean the
# digits belong to something longer (an order number, a hash), so those are left alone.
_PHONE_CN = re.compile(r"(?<![0-9A-Za-z+])(?:(?:\+|00)86[ -]?|86)?1[3-9][0-9](?:[ -]?[0-9]{4}){2}(?![0-9A-Za-z])")

# 18-character resident ID: 6-digit region, YYYYMMDD birth date, 3-digit sequence, check digit or X.
_NATIONAL_ID_CN = re.compile(
    r"(?<![0-9A-Za-z])[1-9][0-9]{5}(?P<birth>(?:19|20)[0-9]{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01]))"
    r"[0-9]{3}[0-9Xx](?![0-9A-Za-z])"
)


def _national_id(match: re.Match[str]) -> _Edit | None:
    """Require a real calendar date, so 20240231… order numbers stay. The check digit is deliberately not
    verified: a mistyped ID is still personal data, and a leak costs more than an extra marker."""
    birth = match.group("birth")
    try:
        dt.date(int(birth[:4]), int(birth[4:6]), int(birth[6:]))
    except ValueError:
        return None
    return match.start(), match.end(), _marker("national_id_cn")


# Dates of birth (Prism's PHI guard): a date is personal only next to a birth label, so "released 2024-05-01"
# stays while "DOB: 1990-03-07", "born on 7 March 1990" and "出生日期：1990年3月7日" do not.
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE = (
    r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}"
    r"|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}"
    rf"|{_DAY}[ \t]+{_MONTH},?[ \t]+\d{{4}}"
    rf"|{_MONTH}[ \t]+{_DAY},?[ \t]+\d{{4}}"
    r"|\d{4}年\d{1,2}月\d{1,2}日"
    r"|(?:19|20)\d{6}"
)
_DATE_OF_BIRTH = re.compile(
    r"(?i:\b(?:dob|d\.o\.b\.?|date[ \t]+of[ \t]+birth|birth[ \t]?date|birthday|born(?:[ \t]+on)?)\b"
    r"|出生日期|出生于|生日)"
    rf"[ \t]*(?:[:：=]|(?i:is|was)\b)?[ \t]*(?P<value>(?i:{_DATE}))(?!\w)"
)

# US Social Security numbers, grouped 3-2-4 with one separator; never area 000, 666 or 9xx, group 00 or serial
# 0000. Ungrouped nine digits are only an SSN after a label: otherwise they are too often something else.
_SSN = re.compile(r"(?<![\w-])(?!000|666|9)\d{3}(?P<sep>[- ])(?!00)\d{2}(?P=sep)(?!0000)\d{4}(?![\w-])")
_SSN_LABELLED = re.compile(
    r"(?i:\b(?:ssn|social[ \t]+security(?:[ \t]+(?:number|no\.?|#))?))[ \t]*(?:[:#=：]|(?i:is|was)\b)?[ \t]*"
    r"(?P<value>(?!000|666|9)\d{3}(?!00)\d{2}(?!0000)\d{4})(?!\w)"
)

# Payment card numbers: 13-19 digits, optionally grouped by spaces or hyphens, with a known issuer prefix and
# length and a valid Luhn check digit. Timestamps, snowflake ids and order numbers fail one of the three.
_CARD = re.compile(r"(?<![\w-])(?:\d[ -]?){12,18}\d(?![\w-])")


def _card_issuer_fits(digits: str) -> bool:
    """Whether the prefix (IIN) belongs to a card network that issues numbers of this length."""
    n, p2, p3, p4 = len(digits), int(digits[:2]), int(digits[:3]), int(digits[:4])
    if digits[0] == "4":  # Visa
        return n in (13, 16, 19)
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:  # Mastercard
        return n == 16
    if p2 in (34, 37):  # American Express
        return n == 15
    if p2 in (36, 38, 39) or 300 <= p3 <= 305:  # Diners Club
        return 14 <= n <= 19
    # Discover, JCB, UnionPay, Maestro
    return (
        p4 == 6011 or p2 in (62, 65) or 644 <= p3 <= 649 or 3528 <= p4 <= 3589 or p2 in (50, 56, 57, 58, 63, 67)
    ) and (13 <= n <= 19)


def _luhn_valid(digits: str) -> bool:
    total = 0
    for position, ch in enumerate(reversed(digits)):
        value = int(ch)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card_number(match: re.Match[str]) -> _Edit | None:
    digits = re.sub(r"[ -]", "", match.group(0))
    if len(set(re.findall(r"[ -]", match.group(0)))) > 1:  # "1234 5678-…" mixes separators: not one number
        return None
    if not (13 <= len(digits) <= 19 and _card_issuer_fits(digits) and _luhn_valid(digits)):
        return None
    return match.start(), match.end(), _marker("card_number")


# E-mail addresses. Not when they are an SSH login (``git@github.com:org/repo``, ``ssh deploy@host``) or the
# user part of a URL: those name an account on a machine, and a project's git origin must stay readable.
_EMAIL = re.compile(
    r"(?<![\w.+%-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@(?:[A-Za-z0-9-]{1,63}\.){1,8}[A-Za-z]{2,24}(?![\w-])"
)
_LOGIN_COMMAND = re.compile(r"\b(?:ssh|scp|sftp|rsync|mosh)\b")


def _email(match: re.Match[str]) -> _Edit | None:
    text, start, end = match.string, match.start(), match.end()
    if text.startswith(":", end) and not text.startswith((": ", ":\n"), end):
        return None
    if text.endswith("//", 0, start) or _LOGIN_COMMAND.search(_line_before(match, span=40)):
        return None
    return start, end, _marker("email")


# Order matters: whole blocks and vendor-prefixed tokens first, so that ``api_key=sk-…`` reports ``openai_key``
# (the assignment rule then sees a marker and leaves it); headers before bare tokens; numbers last.
_RULES: tuple[_Rule, ...] = (
    _Rule("private_key", _PRIVATE_KEY, _whole("private_key")),
    _Rule("openai_key", _OPENAI_KEY, _whole("openai_key")),
    _Rule("stripe_key", _STRIPE_KEY, _whole("stripe_key")),
    _Rule("github_token", _GITHUB_TOKEN, _whole("github_token")),
    _Rule("gitlab_token", _GITLAB_TOKEN, _whole("gitlab_token")),
    _Rule("slack_token", _SLACK_TOKEN, _whole("slack_token")),
    _Rule("google_api_key", _GOOGLE_API_KEY, _whole("google_api_key")),
    _Rule("huggingface_token", _HUGGINGFACE_TOKEN, _whole("huggingface_token")),
    _Rule("npm_token", _NPM_TOKEN, _whole("npm_token")),
    _Rule("atrium_token", _ATRIUM_TOKEN, _whole("atrium_token")),
    _Rule("aws_access_key", _AWS_ACCESS_KEY, _whole("aws_access_key")),
    _Rule("bearer_token", _BEARER_HEADER, _group("bearer_token")),
    _Rule("basic_auth", _BASIC_HEADER, _basic_auth),
    _Rule("bearer_token", _BEARER_BARE, _bearer_bare),
    _Rule("jwt", _JWT, _whole("jwt")),
    _Rule("password", _URL_CREDENTIALS, _group("password")),
    _Rule("password", _ASSIGNMENT, _assignment),
    _Rule("password", _CLI_OPTION, _cli_option),
    _Rule("password", _GLUED_P, _glued_p),
    _Rule("password", _USER_OPTION, _user_option),
    _Rule("password", _SECRET_IN_PROSE, _secret_in_prose),
    _Rule("password", _PASSWORD_ZH, _group("password")),
    _Rule("national_id_cn", _NATIONAL_ID_CN, _national_id),
    _Rule("date_of_birth", _DATE_OF_BIRTH, _group("date_of_birth")),
    _Rule("ssn", _SSN, _whole("ssn")),
    _Rule("ssn", _SSN_LABELLED, _group("ssn")),
    _Rule("card_number", _CARD, _card_number),
    _Rule("phone_cn", _PHONE_CN, _whole("phone_cn")),
    _Rule("email", _EMAIL, _email),
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


# A declined match no longer than this is retried from its next character (a valid card number can start inside
# a longer, invalid digit run); a longer one is skipped whole. Either way no start position is tried twice and a
# retried stretch is bounded, so a rule's scan is linear in the text.
_SHORT_MATCH = 128


def _apply(rule: _Rule, text: str, found: set[str]) -> str:
    """Apply one rule in a single left-to-right scan."""
    pieces: list[str] = []
    kept = scan = 0
    while (match := rule.pattern.search(text, scan)) is not None:
        edit = rule.replace(match)
        if edit is None:
            short = match.end() - match.start() <= _SHORT_MATCH
            scan = match.start() + 1 if short else match.end()
            continue
        start, end, replacement = edit
        found.add(rule.kind)
        pieces += [text[kept:start], replacement]
        kept = end
        scan = max(end, match.start() + 1)
    pieces.append(text[kept:])
    return "".join(pieces)
