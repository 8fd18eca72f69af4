#!/usr/bin/env bash
# `pocket serve` through curl and raw sockets on pocket-nano: health, chat, server-sent events, OpenAI error
# bodies for bad JSON / invalid UTF-8 / wrong types / huge bodies / unknown routes, truncated requests and
# dropped connections that leave it serving, concurrent requests, a taken port, and SIGTERM during a
# long generation (exit 0 within the shutdown bound).
set -uo pipefail
pocket=$1
model=$2/models/pocket-nano-q4.pocket
[ -f "$model" ] || { echo "SKIP: $model is absent"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
check() {  # check NAME CONDITION-RESULT DETAIL
  if [ "$2" = 0 ]; then echo "ok: $1"; else echo "FAILED: $1: $3"; fail=1; fi
}

"$pocket" serve -m "$model" --port 0 -c 512 --parallel 2 --max-body 16 --max-tokens 1000 \
  --shutdown-timeout 0.5 2>"$tmp/err" &
pid=$!
for _ in $(seq 100); do grep -q "http://127.0.0.1:" "$tmp/err" && break; sleep 0.1; done
port=$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/err" | head -1 | cut -d: -f3)
[ -n "$port" ] || { echo "FAILED: no start line: $(cat "$tmp/err")"; exit 1; }
url=http://127.0.0.1:$port
post() {  # post PATH BODY-FILE -> "STATUS BODY"
  curl -s -o "$tmp/body" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$2" "$url$1"
}

code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$url/health")
check "health" "$([ "$code" = 200 ] && grep -q '"status":"ok"' "$tmp/body"; echo $?)" "$code $(cat "$tmp/body")"

printf '%s' '{"messages":[{"role":"user","content":"你好"}],"temperature":0,"max_tokens":16}' >"$tmp/chat.json"
code=$(post /v1/chat/completions "$tmp/chat.json")
check "chat" "$([ "$code" = 200 ] && grep -q '"object":"chat.completion"' "$tmp/body" &&
  grep -q '"completion_tokens":[1-9]' "$tmp/body"; echo $?)" "$code $(cat "$tmp/body")"

printf '%s' '{"messages":[{"role":"user","content":"你好"}],"temperature":0,"max_tokens":16,"stream":true}' >"$tmp/sse.json"
curl -sN -H 'Content-Type: application/json' --data-binary @"$tmp/sse.json" "$url/v1/chat/completions" >"$tmp/sse"
check "server-sent events" "$(grep -q '^data: {.*"chat.completion.chunk"' "$tmp/sse" &&
  [ "$(grep -v '^$' "$tmp/sse" | tail -1)" = "data: [DONE]" ] && grep -q '"usage"' "$tmp/sse"; echo $?)" "$(cat "$tmp/sse")"

expect_error() {  # expect_error NAME PATH FILE STATUS [PATTERN]
  local code
  code=$(post "$2" "$3")
  check "$1" "$([ "$code" = "$4" ] && grep -q '"error":{' "$tmp/body" && grep -q '"message":' "$tmp/body" &&
    { [ -z "${5:-}" ] || grep -q "$5" "$tmp/body"; }; echo $?)" "$code $(cat "$tmp/body")"
}
printf '%s' '{"messages":[{"role":"user"' >"$tmp/trunc.json"
expect_error "truncated JSON is a 400" /v1/chat/completions "$tmp/trunc.json" 400 invalid_request_error
printf '{"messages":[{"role":"user","content":"\xff\xfe bad"}]}' >"$tmp/utf8.json"
expect_error "invalid UTF-8 is a 400" /v1/chat/completions "$tmp/utf8.json" 400
printf '%s' '{"messages":[{"role":"user","content":"x"}],"max_tokens":"ten"}' >"$tmp/type.json"
expect_error "a wrong type names the field" /v1/chat/completions "$tmp/type.json" 400 '"param":"max_tokens"'
printf '%s' '{"messages":[{"role":"user","content":"x"}],"max_tokens":1001}' >"$tmp/max.json"
expect_error "max_tokens over --max-tokens is a 400" /v1/chat/completions "$tmp/max.json" 400
head -c 40000 /dev/zero | tr '\0' 'a' | sed 's/^/{"prompt":"/; s/$/"}/' >"$tmp/huge.json"
expect_error "a body over --max-body is a 413" /v1/completions "$tmp/huge.json" 413 request_too_large
expect_error "an unknown route is a 404" /v1/engines "$tmp/chat.json" 404

# Truncated requests and dropped connections (bash's /dev/tcp), then the server still answers.
for i in $(seq 200); do
  exec 3<>"/dev/tcp/127.0.0.1/$port" || break
  case $((i % 3)) in
    0) printf 'POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 900\r\n\r\n{"mess' >&3 ;;
    1) printf 'GET /health HTTP/1.1\r\nHost: x\r\n' >&3 ;;
  esac
  exec 3>&-
done
code=$(post /v1/chat/completions "$tmp/chat.json")
check "still serving after 200 dropped connections" "$([ "$code" = 200 ]; echo $?)" "$code"

# Concurrent requests over the two sessions (the others queue).
for i in 1 2 3 4 5 6; do
  curl -s -o "$tmp/par$i" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$tmp/chat.json" \
    "$url/v1/chat/completions" >"$tmp/code$i" &
done
wait $(jobs -p | grep -v "^$pid$") 2>/dev/null
same=$(for i in 1 2 3 4 5 6; do grep -o '"content":"[^"]*"' "$tmp/par$i"; done | sort -u | wc -l)
codes=$(cat "$tmp"/code? | tr -d '\n')
check "six concurrent requests, all 200, one answer" "$([ "$codes" = 200200200200200200 ] && [ "$same" = 1 ]; echo $?)" "$codes / $same answers"

# A second server on the same port fails clearly.
"$pocket" serve -m "$model" --port "$port" 2>"$tmp/err2"
rc=$?
check "a taken port is an error" "$([ $rc -ne 0 ] && grep -q 'cannot listen' "$tmp/err2"; echo $?)" "rc $rc $(cat "$tmp/err2")"

# SIGTERM while a long generation runs: the server stops within the bound and exits 0.
printf '%s' '{"prompt":"a","max_tokens":480,"ignore_eos":true}' >"$tmp/long.json"
curl -s -o "$tmp/long_body" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$tmp/long.json" \
  "$url/v1/completions" >"$tmp/long_code" &
curl_pid=$!
sleep 0.05
start=$(date +%s%N)
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
ms=$(( ($(date +%s%N) - start) / 1000000 ))
wait "$curl_pid"
check "SIGTERM: exit 0 within the bound" "$([ $rc = 0 ] && [ $ms -lt 8000 ]; echo $?)" "rc $rc after $ms ms"
check "the in-flight request got an answer" "$(grep -Eq '^(200|503)$' "$tmp/long_code"; echo $?)" "$(cat "$tmp/long_code")"
exit $fail
