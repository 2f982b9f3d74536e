#!/bin/sh
# atrium-capture.sh — a Claude Code hook (Stop and SessionEnd) that sends a session's new turns to Atrium's
# capture endpoint (POST $ATRIUM_URL/api/v1/capture), so memories accumulate without "remember this".
#
# Claude Code runs it with the hook's JSON on stdin: session_id, transcript_path, cwd, hook_event_name. It reads
# the transcript (JSONL, one record a line), turns the main session's records into turns (user and assistant
# text; tool calls and results as tool turns with the tool's name only — their output never leaves the machine),
# and sends the turns not sent yet. It remembers the next turn to send in a small state file per session
# ($ATRIUM_STATE_DIR, default ~/.cache/atrium/claude-code/<session>.next); the server stores each (session, turn)
# once anyway, so a lost state file only costs a resend.
#
# Needs sh, curl, and python3 or jq. It never blocks or fails the agent: short curl timeouts, and it always exits
# 0; problems go to $ATRIUM_STATE_DIR/hook.log.
#
# Environment:
#   ATRIUM_URL            the server (default http://127.0.0.1:8000)
#   ATRIUM_TOKEN          a token with the write scope (atrium token create --user NAME --name hook)
#   ATRIUM_CAPTURE_MODE   light | eager | off (default: the server's)
#   ATRIUM_STATE_DIR      where the state files and the log live (default ~/.cache/atrium)
#   ATRIUM_HOOK_TIMEOUT   seconds one request may take (default 10)
#   ATRIUM_HOOK_PARSER    python3 | jq (default: python3 when installed, else jq)

set -u

STATE_DIR="${ATRIUM_STATE_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/atrium}"
LOG="$STATE_DIR/hook.log"
URL="${ATRIUM_URL:-http://127.0.0.1:8000}"
URL="${URL%/}"
TIMEOUT="${ATRIUM_HOOK_TIMEOUT:-10}"
MAX_TURNS=20     # turns per request (the server takes up to 200; 20 turns of 8,000 characters stay under 1 MB)
MAX_CHARS=8000   # characters kept of one turn's text (the server condenses a long turn anyway)

log() {
    printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >>"$LOG" 2>/dev/null
}

# The hook's input field $1, from the JSON in $INPUT.
field() {
    if [ "$PARSER" = python3 ]; then
        printf '%s' "$INPUT" | python3 -c 'import json,sys
v = json.load(sys.stdin).get(sys.argv[1])
print(v if isinstance(v, str) else "")' "$1" 2>/dev/null
    else
        printf '%s' "$INPUT" | jq -r --arg k "$1" '.[$k] // "" | strings' 2>/dev/null
    fi
}

# Python: the turns of the transcript from index $2 on, as request bodies (one a line).
PY_TURNS='
import json, re, sys
path, start, max_turns, max_chars = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
head = json.loads(sys.argv[5])
with open(path, "rb") as f:
    lines = f.read().split(b"\n")[:-1]  # whole lines only: the last one may still be being written
turns, names = [], {}
for raw in lines:
    try:
        rec = json.loads(raw)
    except ValueError:
        continue  # a broken line is skipped, and stays skipped: indexes do not move
    if not isinstance(rec, dict) or rec.get("isSidechain") or rec.get("isMeta"):
        continue
    if rec.get("type") not in ("user", "assistant"):
        continue
    msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
    content = msg.get("content")
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        kind, at = part.get("type"), rec.get("timestamp")
        if kind == "text" and isinstance(part.get("text"), str) and re.search(r"\S", part["text"]):
            if rec["type"] == "user" and part["text"].startswith(("<command-", "<local-command-")):
                continue  # a slash command echo, not something the user said
            turns.append({"role": rec["type"], "text": part["text"][:max_chars], "tool": None, "at": at})
        elif kind == "tool_use":
            names[part.get("id")] = str(part.get("name") or "tool")
            turns.append({"role": "tool", "text": "", "tool": names[part.get("id")], "at": at})
        elif kind == "tool_result":
            turns.append({"role": "tool", "text": "", "tool": names.get(part.get("tool_use_id"), "tool"), "at": at})
for i, turn in enumerate(turns):
    turn["index"] = i
todo = turns[start:]
for n in range(0, len(todo), max_turns):
    print(json.dumps({**head, "turns": todo[n:n + max_turns]}, ensure_ascii=False))
'

# jq: the same turns, the same indexes.
JQ_TURNS='
[inputs | fromjson? | objects
  | select((.isSidechain | not) and (.isMeta | not) and (.type == "user" or .type == "assistant"))] as $recs
| ([$recs[] | .message.content | arrays | .[] | objects | select(.type == "tool_use")
    | {key: (.id | tostring), value: (.name // "tool" | tostring)}] | from_entries) as $names
| [$recs[] | . as $r | (.message.content | if type == "string" then [{type: "text", text: .}]
    elif type == "array" then . else [] end) | .[] | objects
  | if .type == "text" and (.text | type) == "string" and (.text | test("\\S")) then
      if $r.type == "user" and (.text | test("^<(command-|local-command-)")) then empty
      else {role: $r.type, text: .text[:$max_chars], tool: null, at: $r.timestamp} end
    elif .type == "tool_use" then {role: "tool", text: "", tool: $names[.id | tostring], at: $r.timestamp}
    elif .type == "tool_result" then {role: "tool", text: "", tool: ($names[.tool_use_id | tostring] // "tool"),
      at: $r.timestamp}
    else empty end]
| to_entries | map(.value + {index: .key}) | .[$start:]
| range(0; length; $max_turns) as $n | $head + {turns: .[$n:$n + $max_turns]}
'

bodies() {
    head_json="$1"
    if [ "$PARSER" = python3 ]; then
        PYTHONIOENCODING=utf-8 python3 -c "$PY_TURNS" "$TRANSCRIPT" "$NEXT" "$MAX_TURNS" "$MAX_CHARS" "$head_json"
    else
        lines=$(wc -l <"$TRANSCRIPT")
        head -n "$lines" "$TRANSCRIPT" | jq -R -n -c --argjson start "$NEXT" --argjson max_turns "$MAX_TURNS" \
            --argjson max_chars "$MAX_CHARS" --argjson head "$head_json" "$JQ_TURNS"
    fi
}

# A JSON string of $1 ("null" when empty).
json_string() {
    if [ -z "$1" ]; then
        printf 'null'
    elif [ "$PARSER" = python3 ]; then
        python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"
    else
        jq -n --arg v "$1" '$v'
    fi
}

send() {
    mkdir -p "$STATE_DIR/claude-code" 2>/dev/null || return 0
    if [ -z "${ATRIUM_TOKEN:-}" ]; then
        log "ATRIUM_TOKEN is not set: nothing sent"
        return 0
    fi
    PARSER="${ATRIUM_HOOK_PARSER:-}"
    if [ -z "$PARSER" ]; then
        if command -v python3 >/dev/null 2>&1; then PARSER=python3; elif command -v jq >/dev/null 2>&1; then PARSER=jq; fi
    fi
    if [ "$PARSER" != python3 ] && [ "$PARSER" != jq ]; then
        log "needs python3 or jq to read the transcript: nothing sent"
        return 0
    fi
    INPUT=$(cat)
    SESSION=$(field session_id)
    TRANSCRIPT=$(field transcript_path)
    CWD=$(field cwd)
    EVENT=$(field hook_event_name)
    case "$SESSION" in
        '' | *[!A-Za-z0-9._:@+=-]*)
            log "no usable session_id in the hook input (${EVENT:-no event}): nothing sent"
            return 0 ;;
    esac
    if [ ! -r "$TRANSCRIPT" ]; then
        log "session $SESSION: transcript '$TRANSCRIPT' is not readable: nothing sent"
        return 0
    fi
    # One run at a time per session (Stop and SessionEnd can fire together); a lock older than two minutes is
    # left over from a killed run.
    LOCK="$STATE_DIR/claude-code/$SESSION.lock"
    if ! mkdir "$LOCK" 2>/dev/null; then
        if [ -n "$(find "$LOCK" -maxdepth 0 -mmin +2 2>/dev/null)" ]; then
            rmdir "$LOCK" 2>/dev/null
            mkdir "$LOCK" 2>/dev/null || return 0
        else
            return 0
        fi
    fi
    trap 'rmdir "$LOCK" 2>/dev/null' EXIT
    STATE="$STATE_DIR/claude-code/$SESSION.next"
    NEXT=$(cat "$STATE" 2>/dev/null)
    case "$NEXT" in '' | *[!0-9]*) NEXT=0 ;; esac
    ORIGIN=""
    if [ -n "$CWD" ] && command -v git >/dev/null 2>&1; then
        ORIGIN=$(git -C "$CWD" remote get-url origin 2>/dev/null)
    fi
    MODE="${ATRIUM_CAPTURE_MODE:-}"
    HEAD_JSON="{\"session\": $(json_string "$SESSION"), \"client\": \"claude-code\", \"origin\": $(json_string "$ORIGIN"),"
    HEAD_JSON="$HEAD_JSON \"cwd\": $(json_string "$CWD"), \"mode\": $(json_string "$MODE")}"
    BODIES="$STATE_DIR/claude-code/$SESSION.bodies.$$"
    if ! bodies "$HEAD_JSON" >"$BODIES" 2>>"$LOG"; then
        log "session $SESSION: could not read the transcript with $PARSER"
        rm -f "$BODIES"
        return 0
    fi
    SENT=0
    while IFS= read -r body; do
        last=$(printf '%s' "$body" | if [ "$PARSER" = python3 ]; then
            python3 -c 'import json,sys; print(json.load(sys.stdin)["turns"][-1]["index"])'
        else
            jq '.turns[-1].index'
        fi)
        status=$(printf '%s' "$body" | curl -sS -o "$STATE_DIR/claude-code/$SESSION.answer" -w '%{http_code}' \
            --connect-timeout 3 --max-time "$TIMEOUT" -X POST "$URL/api/v1/capture" \
            -H "Authorization: Bearer $ATRIUM_TOKEN" -H 'Content-Type: application/json' --data-binary @- \
            2>>"$LOG")
        case "$status" in
            200 | 202)
                NEXT=$((last + 1))
                printf '%s\n' "$NEXT" >"$STATE.tmp" && mv "$STATE.tmp" "$STATE"
                SENT=$((SENT + 1)) ;;
            *)
                # Left for the next run (the server stores each turn once, so resending is safe).
                log "session $SESSION: POST $URL/api/v1/capture answered ${status:-nothing}:" \
                    "$(head -c 300 "$STATE_DIR/claude-code/$SESSION.answer" 2>/dev/null)"
                break ;;
        esac
    done <"$BODIES"
    rm -f "$BODIES" "$STATE_DIR/claude-code/$SESSION.answer"
    if [ "$EVENT" = SessionEnd ] && [ "$SENT" -gt 0 ]; then
        log "session $SESSION ended: turns sent up to $NEXT"
    fi
    return 0
}

send || true
exit 0
