"""Entity mentions by rule, and the one normalisation every entity name goes through (memory.knowledge.extraction uses
both).

Pure functions: no ORM, no settings. The rules favour precision over recall — a wrong entity pollutes a palace's
lexicon and boosts the wrong memories, a missed one is found later once it is known (a known name or alias is
matched anywhere, memory.knowledge.extraction) — so each rule asks for positive evidence of a name:

1. Capitalised multi-word names ("Golden Gate Bridge", "Bank of America"): two or more capitalised words in a row
   (joined by of/de/da/van/von/…), leading common words dropped ("The", "Hey", "Last").
2. Single capitalised words that are not sentence-initial ("met Caroline", "deployed to Heroku") and are not common
   words, calendar words or roles; a sentence-initial one only when the same text also writes it capitalised
   mid-sentence, or it is a known tool or place, or a given name before a verb ("Tom wants"). Acronyms (4-6
   capitals: "LGBTQ") unless the text is shouting; shorthand is never a name (memory.knowledge.lexicon: ENV, SLO,
   CET, Q1, W14, FY25, p95, PRs, any capital word of at most three letters that is not a known tool such as AWS).
3. Code identifiers: `backticked` names, camelCase, inner-capital PascalCase ("PostgreSQL"), dotted
   names ("memory.search", "Node.js"); package names after an install command ("pip install httpx", "npm i
   react"), pinned versions ("django==6.1", "react@18") and scoped packages ("@types/node"); known tools in lower
   case ("we run redis"). A snake_case word is a variable, a setting or a secret ("webhook_secret_next") unless it
   is a known tool (pg_dump) or backticked.
4. @handles ("@alice", not e-mail addresses) and repositories ("github.com/org/repo", or a bare owner/repo whose
   parts are not common words and look like code: a hyphen, dot, underscore, digit or inner capital; not a file's
   path such as checkout/prod.tfstate, nor p50/p95), and a hyphenated name before "repo" ("the payments-service
   repo").
5. Chinese person names: one of the common surnames below followed by one or two ideographs, where the name is
   bounded on both sides (start/end of text, a non-ideograph, or a function word or speech verb such as 的 说 和
   跟 是 在 — see `_CJK_AFTER` / `_CJK_BEFORE`); surnames that are also everyday words (高 于 方 白 周 …) only with
   a title (王总, 李老师) or as 老王 / 小李. "王小明说" gives 王小明, "跟李雷一起" gives 李雷;
   a verb after the name bounds it too ("王伟喜欢…", `_CJK_VERBS`). Known Chinese places and tools
   (北京, 阿里云) by the lexicon.

Kinds are guessed by rule: handles and Chinese names → person; repositories → project; identifiers and packages →
tool; names after a title (Dr, Mr, Ms…) or before a speech verb ("Caroline said") → person; then the lexicon
(memory.knowledge.lexicon): a known tool → tool, a known place → place, an organisation's suffix (Corp, Inc…) →
other, "Project X" → project; names ending in Street/Park/Lake/City… → place; a name that starts with a given name
("Marco Rossi", "Priya") → person; a name the caller says is a person (a palace speaker) → person; else other.
Measured on a labelled set (`atrium entity-eval`, ops.eval.entities).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from dataclasses import dataclass

from memory.knowledge.lexicon import (
    GIVEN_NAMES,
    ORG_LAST,
    PLACES,
    PROJECT_FIRST,
    TOOL_PHRASES,
    TOOLS,
    TOOLS_ANY_CASE,
    never_a_name,
)

__all__ = ["RuleMention", "normalise", "rule_mentions", "text_keys"]

MAX_NAME_CHARS = 200
MAX_KEYS = 3000  # n-grams of one text looked up against a palace's lexicon
MAX_GRAM_WORDS = 4
CJK_GRAMS = (2, 6)  # lengths of the ideograph substrings looked up (names and terms are 2-6 characters)

# Punctuation stripped from the ends of a name; symbols (+ # @) and inner punctuation stay ("C++", "@alice", "a.b").
_END_PUNCT = "\"'`.,;:!?()[]{}<>«»“”‘’「」『』（）【】《》〈〉、，。；：！？…-–—·*_~/\\|"


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def normalise(name: str) -> str:
    """The key of a name: Unicode NFKC (full-width letters and compatibility forms become plain ones), casefold
    (so "Straße" and "STRASSE" agree), every run of whitespace one space, and punctuation stripped from both ends
    (quotes, brackets, full stops, commas; symbols such as + # @ stay, so "C++" and "@alice" keep them). At most
    200 characters. "  “Caroline”. " → "caroline"; "ＰｏｓｔｇｒｅＳＱＬ" → "postgresql"."""
    text = " ".join(unicodedata.normalize("NFKC", name).casefold().split())
    return text.strip(_END_PUNCT + " ")[:MAX_NAME_CHARS].strip()


def name_key(text: str) -> str:
    """The normalised form a typed name is matched by (an edit, a filter): `normalise`, control characters first
    turned into spaces."""
    return normalise(_CONTROL.sub(" ", text))


@dataclass(frozen=True)
class RuleMention:
    name: str
    kind: str


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# --- word lists --------------------------------------------------------------------------------------------------

# Words that start sentences or greet, capitalised for that reason only (casefolded). Not names.
_COMMON = _words(
    """a an the and or but so if then than that this these those there here is are was were be been am do does did
    i me my mine you your yours he him his she her hers it its we us our they them their what which who whom
    whose when where why how all any both each few more most other some such only own same too very just also
    really now still yet again ever even much many lot lots of in on at by for with about against between into
    through during before after above below to from up down out off over under as until while can could will
    would shall should may might must get got going gonna wanna yeah yes yep yup nope no not oh ooh wow hey hi
    hello ok okay thanks thank well like one ones thing things something anything nothing everything everyone
    someone anyone let lets let's please sure good nice cool awesome amazing glad happy sorry congrats
    congratulations haha lol omg hmm um uh ah aw aww yay alright right exactly totally absolutely definitely
    anyway btw also today yesterday tomorrow tonight last next this every morning evening night week weekend
    month year day best better love hope wish guess think know see
    look looks make made take took give gave keep kept tell told say said ask asked go went come came want
    wanted need try tried feel felt mean means sounds sound seems seem maybe perhaps actually honestly basically
    anyhow speaking talking thinking working having being doing getting making hearing seeing reading watching
    remember remembered note notes use used using set update updated add added fix fixed bug run ran done dear
    mom dad mum mother father brother sister wife husband son daughter kids kid friend friends family mr mrs ms
    dr prof sir madam team everybody guys folks people man woman boy girl baby yours sincerely regards cheers
    bye goodbye welcome true false none null todo fyi asap imo imho tbh image photo picture pic video link
    i'm i've i'll i'd it's that's what's let's there's here's he's she's we're we've they're you're you've
    sometimes always never usually often anyways also plus meanwhile luckily hopefully unfortunately"""
)
_CALENDAR = _words(
    """monday tuesday wednesday thursday friday saturday sunday january february march april may june july august
    september october november december jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu
    thur thurs fri sat sun christmas easter mondays tuesdays wednesdays thursdays fridays saturdays sundays"""
)
_ROLES = frozenset({"user", "assistant", "system", "human", "ai", "bot", "agent", "model", "tool", "developer"})
_ACRONYM_STOP = frozenset(
    {"ok", "okay", "omg", "lol", "lmao", "tbh", "btw", "fyi", "asap", "imo", "imho", "idk", "tv", "am", "pm",
     "diy", "aka", "etc", "vs", "ps", "rip", "faq", "eta", "tba", "tbd", "wip", "nb", "ie", "eg", "bc"}
)  # fmt: skip
_TITLE_SMALL = frozenset({"with", "from", "into", "over", "upon", "about", "under", "without", "through"})
_CONNECTORS = frozenset({"of", "de", "da", "del", "der", "van", "von", "la", "le", "du", "di", "y", "al", "bin"})
_TITLES = frozenset({"mr", "mrs", "ms", "mx", "dr", "prof", "professor", "sir", "dame", "aunt", "uncle", "coach"})
_SPEECH_VERBS = frozenset(
    {"said", "says", "told", "asked", "replied", "mentioned", "thinks", "thought", "wrote", "wants", "feels"}
)
_PLACE_LAST = _words(
    """street st road rd avenue ave boulevard lane park lake river mountain mountains mount hill hills valley beach
    bay island islands city town village county state province country bridge canyon falls forest desert museum
    airport station square harbor harbour coast"""
)
_PLACE_FIRST = frozenset({"mount", "lake", "fort", "port", "san", "santa", "saint", "st", "new", "north", "south",
                          "east", "west", "los", "las", "el"})  # fmt: skip
_PROJECT_LAST = frozenset({"project", "app", "initiative", "program", "programme", "sdk", "api", "service"})
# Words that are not repository parts in "x/y" ("and/or", "client/server", "src/lib").
_SLASH_WORDS = _words(
    """and or his her he she yes no on off true false pros cons male female day night week month year before after
    client server input output read write src lib bin usr etc home tmp var dev prod test tests docs api in out
    up down left right am pm him them"""
)

# --- patterns ----------------------------------------------------------------------------------------------------

_REDACTED = re.compile(r"\[REDACTED:[^\]]*\]")
_URL = re.compile(r"\b(?:https?://|www\.)\S+", re.IGNORECASE)
_REPO_URL = re.compile(
    r"\b(?:github|gitlab|codeberg|bitbucket)\.(?:com|org)[/:]([A-Za-z0-9][\w.-]*)/([A-Za-z0-9][\w.-]*?)(?:\.git)?\b"
)
_BARE_REPO = re.compile(r"(?<![\w./@:-])([A-Za-z0-9][\w.-]{0,38})/([A-Za-z0-9][\w.-]{0,99})(?![\w/])")
_HANDLE = re.compile(r"(?<![\w.@/])@([A-Za-z0-9][A-Za-z0-9_-]{1,38})(?![\w@/-])")
_SCOPED = re.compile(r"(?<![\w.@/])(@[a-z0-9][\w.-]*/[a-z0-9][\w.-]*)")
_BACKTICK = re.compile(r"`([^`\s]{2,80})`")
_INSTALL = re.compile(
    r"\b(?:pip3?|uv|poetry|pipx|npm|pnpm|yarn|bun|cargo|gem|brew|apt|apt-get|go|composer|conda)\s+"
    r"(?:install|add|i|get)\s+((?:-{1,2}[\w-]+\s+)*)([\w@][\w.@/=<>~^-]*(?:\s+[\w@][\w.@/=<>~^-]*){0,4})"
)
_PINNED = re.compile(r"(?<![\w@/])([A-Za-z][\w.-]*)(?:==|>=|<=|~=|@\^?|@~)v?\d[\w.]*")
_SNAKE = re.compile(r"(?<![\w.])([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)(?![\w])")
_CAMEL = re.compile(r"(?<![\w.])([a-z][a-z0-9]*[A-Z][A-Za-z0-9]*)(?![\w])")
_INNER_CAP = re.compile(r"(?<![\w.])((?:[A-Z][a-z0-9]+){1,}[A-Z][A-Za-z0-9]*)(?![\w])")
_DOTTED = re.compile(r"(?<![\w.@/])([A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)+)(?![\w(])")
_WORD = re.compile(r"[^\W\d_](?:[\w'’-]*\w)?")
_LOWER_WORD = re.compile(r"(?<![\w./@-])[a-z][a-z0-9_]*[a-z0-9](?![\w/@-]|\.\w)")
_NAMED_REPO = re.compile(r"(?<![\w./@-])([a-z0-9]+(?:[-_.][a-z0-9]+)+)\s+(?:repo|repository|monorepo)\b")
# A path's last part: a file, not a repository ("checkout/prod.tfstate", "config/settings.py").
_FILE_EXT = re.compile(
    r"\.(?:py|js|ts|tsx|jsx|json|ya?ml|toml|md|txt|log|csv|sql|sh|tf|tfstate|tfvars|ini|cfg|conf|env|lock|html|css|go|"
    r"rs|rb|java|kt|xml|pem|key|crt|pdf|png|jpg|gz|zip|tar)$",
    re.IGNORECASE,
)
# A quoted title: "Becoming Nicole", 'Embracing Identity', “A Dance with Dragons”.
_QUOTED = re.compile(r"[\"“]([^\"“”\n]{2,80})[\"”]|(?<![\w])'([^'\n]{2,60})'(?![\w])")
_SENTENCE_START = re.compile(r"(?:\A|[.!?…。！？:;\n]|\s[-–—]\s*)[\s\"'“‘(\[*_>#-]*\Z")
_POSSESSIVE = re.compile(r"['’]s?$")

# --- Chinese names -------------------------------------------------------------------------------------------------

_HAN = r"\u3400-\u4dbf\u4e00-\u9fff"
# The most common Chinese surnames (single and compound). Those also everyday words need a title or 老/小.
_SURNAMES = (
    "王李张刘陈杨黄赵吴徐孙胡朱郭何林罗郑梁谢宋唐许韩冯邓曹彭曾萧肖董袁潘蒋蔡杜魏吕丁沈姚卢姜崔钟谭陆汪范廖"
    "贾韦邹孟熊秦邱尹薛闫段雷侯史陶黎贺顾郝龚邵钱覃戴莫孔汤殷柯侯翁彭尤俞鲍章甘蒲邢"
)
_AMBIGUOUS_SURNAMES = "高于方白周马金石田夏叶江龙严武毛余程任万向常文付易"
_COMPOUND_SURNAMES = ("欧阳", "司马", "诸葛", "上官", "东方", "慕容", "令狐", "皇甫", "尉迟", "公孙", "长孙", "宇文",
                      "司徒", "夏侯", "端木", "南宫")  # fmt: skip
_CJK_TITLES = "总|经理|老师|工|先生|女士|小姐|医生|教授|博士|主任|老板|律师|同学|师傅|阿姨|叔叔"
_CJK_AFTER = "的说是在和跟与同给让把被也都会要想刚已就还对负提表认觉告讲问去来做写发看用叫请一今昨"
_CJK_STRONG = "的说是在和跟与同也都今昨已刚"  # after a two-character given name only these (or a non-ideograph)
_CJK_BEFORE = "和跟与同给让把被问找向对叫请见是由午天"  # 午 天: after a time ("下午孙浩会…", "明天王伟…")
# Verbs that follow a person's name: "王伟喜欢…", "黄磊建议…", "由赵敏维护". Whole words, so a given name may still
# contain their first character (张建国).
_CJK_VERBS = _words(
    "喜欢 希望 建议 决定 开会 维护 负责 认为 觉得 打算 需要 准备 计划 参加 主持 带领 安排 整理 演示 调试 提出 同意"
    " 发现 完成 修复 介绍"
)
# Everyday words that begin with a surname character.
_CJK_NOT_NAMES = _words(
    "黄色 黄金 王者 王国 王子 陈述 陈列 林业 杨树 宋体 胡说 胡同 朱红 孙子"
    " 钱包 钱币 沈阳 林林 许多 许可 曾经 彭湃 韩国 韩语 蒋介 戴着 孔子 邓小"
    " 谢谢 谢意 汤圆 汤面 汤匙 曹操 罗马 罗列 郭德 梁上 董事 袁大 潘多 何时"
    " 何处 何况 何必 吴语 徐徐 卢布 崔健 顾客 顾问 贺卡 贺词 雷声 雷雨 史上"
    " 陶瓷 章节 章程 甘心 殷勤 邵阳"
)
_ANY_SURNAME = "|".join([*_COMPOUND_SURNAMES, f"[{_SURNAMES}{_AMBIGUOUS_SURNAMES}]"])
_CJK_TITLED = re.compile(
    rf"(?<![{_HAN}])((?:{_ANY_SURNAME})(?:{_CJK_TITLES}))|([老小](?:{_ANY_SURNAME}))(?=[^{_HAN}]|[{_CJK_AFTER}]|$)"
)
_CJK_SURNAME = re.compile("|".join([*_COMPOUND_SURNAMES, f"[{_SURNAMES}]"]))
_NUMERAL_BEFORE = re.compile(rf"[一二三四五六七八九十两几这那每某哪][{_HAN}]?\Z")


def _is_han(ch: str) -> bool:
    return "\u3400" <= ch <= "\u4dbf" or "\u4e00" <= ch <= "\u9fff"


def _chinese(text: str) -> list[RuleMention]:
    found: list[RuleMention] = []
    for match in _CJK_TITLED.finditer(text):
        found.append(RuleMention(match.group(1) or match.group(2), "person"))
    for match in _CJK_SURNAME.finditer(text):
        s, e = match.start(), match.end()
        if s > 0 and _is_han(text[s - 1]) and text[s - 1] not in _CJK_BEFORE:
            continue  # inside a word
        if _NUMERAL_BEFORE.search(text[max(0, s - 2) : s]):
            continue  # a measure word or a demonstrative: "一张纸", "这周"
        for given in (2, 1):  # the longer name first: "王小明说" is 王小明, not 王小
            name = text[s : e + given]
            after = text[e + given : e + given + 1]
            chars = text[e : e + given]
            if len(chars) < given or not all(_is_han(c) and c not in _CJK_AFTER for c in chars):
                continue
            verb = text[e + given : e + given + 2] in _CJK_VERBS
            if after and _is_han(after) and after not in (_CJK_STRONG if given == 2 else _CJK_AFTER) and not verb:
                continue
            if name[:2] not in _CJK_NOT_NAMES:
                found.append(RuleMention(name, "person"))
            break
    for word in _CJK_KNOWN:
        if word in text:
            found.append(RuleMention(word, "place" if word in PLACES else "tool"))
    return found


_CJK_KNOWN = sorted(w for w in PLACES | TOOLS if _is_han(w[0]))


# --- the English / code rules --------------------------------------------------------------------------------------


def _is_cap(word: str) -> bool:
    return word[:1].isupper() and (not word.isupper() or len(word) > 1)


def _known_initial(key: str, after: str) -> bool:
    """A sentence-initial word that is a name all the same: a tool whose name is no English word ("Jenkins is
    deprecated"), or a given name followed by a lower-case verb ("Tom wants", not "Mark the ticket")."""
    if key in TOOLS_ANY_CASE or key in PLACES:
        return True
    nxt = re.match(r"\s+([a-z]+)", after)
    return key in GIVEN_NAMES and nxt is not None and nxt.group(1) not in _COMMON


def _kind_for_name(words: list[str], *, before: str, after: str, people: frozenset[str]) -> str:
    lowered = [w.casefold() for w in words]
    if normalise(" ".join(words)) in people or (len(words) == 1 and lowered[0] in people):
        return "person"
    prev = re.findall(r"[\w.]+", before[-12:])
    if prev and (prev[-1].rstrip(".").casefold() in _TITLES or prev[-1] == "named"):
        return "person"
    nxt = re.findall(r"\w+", after[:20])
    if nxt and nxt[0].casefold() in _SPEECH_VERBS:
        return "person"
    joined = "_".join(lowered)
    if joined in TOOLS or joined in TOOL_PHRASES:
        return "tool"
    if joined in PLACES or (len(words) == 1 and lowered[0] in PLACES):
        return "place"
    if len(words) > 1 and lowered[-1] in ORG_LAST:
        return "other"  # an organisation
    if len(words) > 1 and lowered[0] in PROJECT_FIRST:
        return "project"
    if lowered[-1] in _PLACE_LAST or (len(words) > 1 and lowered[0] in _PLACE_FIRST):
        return "place"
    if len(words) > 1 and lowered[-1] in _PROJECT_LAST:
        return "project"
    if lowered[0] in GIVEN_NAMES and len(words) <= 4 and lowered[-1] not in PLACES:
        return "person"  # "Marco Rossi", "Priya", "Victor Hugo Almeida"
    if len(words) > 1 and all(w in PLACES for w in lowered):
        return "place"  # "Tel Aviv", "San Diego" (each word listed)
    if len(words) == 1 and re.search(r"[a-z][A-Z]", words[0]):
        return "tool"
    return "other"


def _titles(text: str) -> tuple[list[RuleMention], str]:
    """Quoted titles in title case (every word of four or more letters capitalised, at most 8 words), and the
    text with them blanked so the capitalised scan does not cut them into pieces."""
    found: list[RuleMention] = []
    for match in _QUOTED.finditer(text):
        title = (match.group(1) or match.group(2)).strip(" .,!?")
        words = title.split()
        if not words or len(words) > 8 or not words[0][:1].isupper():
            continue
        if len(words) == 1 and title.casefold() in _COMMON:
            continue  # "That" is one of…
        if all(w[:1].isupper() or len(w) < 4 or w in _TITLE_SMALL for w in words) and any(c.islower() for c in title):
            found.append(RuleMention(title, "other"))
            text = text[: match.start()] + " " * (match.end() - match.start()) + text[match.end() :]
    return found, text


def _capitalised(text: str, *, people: frozenset[str]) -> list[RuleMention]:
    words = [(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]
    shouting = sum(c.isupper() for c in text) > 0.5 * max(1, sum(c.isalpha() for c in text))

    def starts_sentence(at: int) -> bool:
        before = text[:at]
        if re.search(r"[\"“‘']\Z", before):
            return True  # a quotation starts
        title = re.search(r"(\w+)\.\s*\Z", before)
        return bool(_SENTENCE_START.search(before)) and not (title and title.group(1).casefold() in _TITLES)

    # capitalised somewhere a sentence does not start
    mid_caps = {w.casefold() for w, s, _ in words if _is_cap(w) and not starts_sentence(s)}
    lower = {w.casefold() for w, _, _ in words if w[:1].islower()}
    found: list[RuleMention] = []
    i = 0
    while i < len(words):
        if not _is_cap(words[i][0]):
            i += 1
            continue
        group = [i]
        j = i + 1
        while j < len(words):
            gap = text[words[j - 1][2] : words[j][1]]
            word = words[j][0]
            # "Bank of America", "Lord of the Rings": one or two connectors between capitalised words.
            nxt = [w for w, _, _ in words[j + 1 : j + 3]]
            joins = (
                word.casefold() in _CONNECTORS
                and bool(nxt)
                and (_is_cap(nxt[0]) or (len(nxt) > 1 and nxt[0] == "the" and _is_cap(nxt[1])))
            )
            joins = joins or (word == "the" and bool(group) and words[group[-1]][0] in _CONNECTORS)
            if gap == " " and (_is_cap(word) or joins):
                group.append(j)
            else:
                break
            j += 1
        i = j
        parts = [_POSSESSIVE.sub("", words[k][0]) for k in group]
        starts = [words[k][1] for k in group]
        while parts and (parts[0].casefold() in _COMMON or parts[0].casefold() in _CALENDAR):
            parts, starts = parts[1:], starts[1:]
        while parts and (parts[-1].casefold() in _COMMON or parts[-1] in _CONNECTORS or parts[-1] == "the"):
            parts, starts = parts[:-1], starts[:-1]
        while parts and never_a_name(parts[0]):  # "EU Lena Fischer", "Q3 Okta"
            parts, starts = parts[1:], starts[1:]
        while parts and never_a_name(parts[-1]):  # "Backend PRs"
            parts, starts = parts[:-1], starts[:-1]
        if not parts:
            continue
        start, end = starts[0], starts[-1] + len(parts[-1])
        if len(parts) == 1:
            word = parts[0]
            key = word.casefold()
            if key in _CALENDAR or key in _ROLES or len(word) < 2:
                continue
            if word.isupper():
                if shouting or key in _ACRONYM_STOP or len(word) > 6:
                    continue
            elif (
                starts_sentence(start)
                and key not in mid_caps
                and key not in people
                and not _known_initial(key, text[start + len(word) :])
            ):
                continue  # sentence-initial: a name only if also capitalised mid-sentence (or a known one)
            if key in lower and not word.isupper():
                continue  # written in lower case elsewhere in the text: an ordinary word
        kind = _kind_for_name(parts, before=text[:start], after=text[end:], people=people)
        found.append(RuleMention(" ".join(parts), kind))
    return found


def _code(text: str) -> list[RuleMention]:
    found: list[RuleMention] = []
    for match in _SCOPED.finditer(text):
        found.append(RuleMention(match.group(1), "tool"))
    for match in _INSTALL.finditer(text):
        for token in match.group(2).split():
            name = re.split(r"==|>=|<=|~=|(?<=.)@", token)[0]
            if not name or name.casefold() in _COMMON:
                break  # "pip install httpx and then…": the package list has ended
            if not name.startswith("-"):
                found.append(RuleMention(name, "tool"))
    for match in _PINNED.finditer(text):
        found.append(RuleMention(match.group(1), "tool"))
    for match in _BACKTICK.finditer(text):
        token = match.group(1).strip("()")
        if re.fullmatch(r"[\w.@/+#:-]+", token) and not token.isdigit():
            found.append(RuleMention(token, "tool"))
    for match in _SNAKE.finditer(text):
        # A snake_case word is a variable, a setting or a secret's name ("webhook_secret_next", LOG_LEVEL) unless
        # it is a known tool (pg_dump) or the writer marked it as code (`backticks`, above).
        if match.group(1).casefold() in TOOLS:
            found.append(RuleMention(match.group(1), "tool"))
    for pattern in (_CAMEL, _INNER_CAP):
        for match in pattern.finditer(text):
            token = match.group(1)
            if not token.startswith(("Mc", "Mac")):
                found.append(RuleMention(token, "tool"))
    for match in _LOWER_WORD.finditer(text):
        if match.group(0) in TOOLS_ANY_CASE:
            found.append(RuleMention(match.group(0), "tool"))  # "we run redis", "dbt models"
    for match in _NAMED_REPO.finditer(text):
        found.append(RuleMention(match.group(1), "project"))  # "the payments-service repo"
    for match in _DOTTED.finditer(text):
        token = match.group(1)
        parts = token.split(".")
        if all(len(p) <= 1 for p in parts) or len(parts[-1]) < 2:
            continue  # "e.g", "U.S", a sentence's last word before an initial
        if any(a[:1].islower() and b[:1].isupper() for a, b in itertools.pairwise(parts)):
            continue  # "late.The": two sentences without a space
        found.append(RuleMention(token, "tool"))
    return found


def _handles_and_repos(text: str, urls: list[str]) -> list[RuleMention]:
    found: list[RuleMention] = []
    for url in urls:
        for match in _REPO_URL.finditer(url):
            found.append(RuleMention(f"{match.group(1)}/{match.group(2)}", "project"))
    for match in _REPO_URL.finditer(text):
        found.append(RuleMention(f"{match.group(1)}/{match.group(2)}", "project"))
    for match in _HANDLE.finditer(text):
        found.append(RuleMention("@" + match.group(1), "person"))
    stripped = _REPO_URL.sub(" ", text)
    for match in _BARE_REPO.finditer(stripped):
        owner, repo = match.group(1), match.group(2).rstrip(".")
        if owner.isdigit() or repo.isdigit() or not re.search(r"[A-Za-z]", owner + repo):
            continue  # dates and fractions
        if {owner.casefold(), repo.casefold()} & (_COMMON | _SLASH_WORDS):
            continue
        if not re.search(r"[-_.\d]|[a-z][A-Z]", owner + repo):
            continue  # "TCP/IP", "advice/assistance": alternatives; a bare repository name looks like code
        if _FILE_EXT.search(repo) or re.fullmatch(r"p\d{2,3}", repo, re.IGNORECASE):
            continue  # a file's path, or percentiles ("p50/p95")
        found.append(RuleMention(f"{owner}/{repo}", "project"))
    return found


def rule_mentions(text: str, *, people: frozenset[str] = frozenset()) -> list[RuleMention]:
    """The mentions the rules find in `text` (see the module docstring), first occurrence first, one per key.
    `people` holds normalised names the caller knows are people (a palace's speakers)."""
    text = unicodedata.normalize("NFKC", _REDACTED.sub(" ", text))
    urls = _URL.findall(text)
    plain = _URL.sub(" ", text)
    titles, untitled = _titles(_DOTTED.sub(" ", _BACKTICK.sub(" ", _REPO_URL.sub(" ", plain))))
    found = [
        *_handles_and_repos(plain, urls),
        *_code(_REPO_URL.sub(" ", plain)),
        *titles,
        *_capitalised(untitled, people=people),
        *_chinese(plain),
    ]
    seen: set[str] = set()
    out: list[RuleMention] = []
    for mention in found:
        key = normalise(mention.name)
        if key and key not in seen and len(key) >= 2:
            seen.add(key)
            out.append(RuleMention(mention.name.strip()[:MAX_NAME_CHARS], mention.kind))
    return out


# --- keys of a text, to look up known names -------------------------------------------------------------------------

_GRAM_TOKEN = re.compile(r"[@#]?[^\W_][\w.+#@/'’-]*|[^\W\d_]")
_CJK_RUN = re.compile(f"[{_HAN}]+")


def text_keys(text: str, *, limit: int = MAX_KEYS) -> list[str]:
    """Normalised word n-grams (1-4 words) and ideograph substrings (2-6) of `text`, to match against entity keys
    and alias keys; single words that are common English words are left out (an entity called "Go" or "Well" is
    then found only by a longer name). Bounded by `limit`."""
    text = unicodedata.normalize("NFKC", text)
    keys: dict[str, None] = {}
    for segment in re.split(r"[,;:!?()\[\]{}\"“”‘’「」。，；：！？、\n]+|\.(?:\s|$)", text):
        tokens = [normalise(_POSSESSIVE.sub("", t)) for t in _GRAM_TOKEN.findall(segment)]
        tokens = [t for t in tokens if t]
        for i in range(len(tokens)):
            for n in range(1, MAX_GRAM_WORDS + 1):
                if i + n > len(tokens):
                    break
                if n == 1 and (tokens[i] in _COMMON or len(tokens[i]) < 2):
                    continue
                keys[" ".join(tokens[i : i + n])] = None
                if len(keys) >= limit:
                    return list(keys)
    low, high = CJK_GRAMS
    for run in _CJK_RUN.findall(text):
        for i in range(len(run)):
            for n in range(low, high + 1):
                if i + n > len(run):
                    break
                keys[run[i : i + n]] = None
                if len(keys) >= limit:
                    return list(keys)
    return list(keys)
