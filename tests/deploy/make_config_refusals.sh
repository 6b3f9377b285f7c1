#!/usr/bin/env bash
# deploy/haproxy/make-config refuses what HAProxy would refuse only when it starts (issue 53: a
# replica without its agent port, `localhost:abc:def`, exited 0 and wrote a config HAProxy
# rejected with "unknown keyword '500ms'"), naming the argument; what it accepts HAProxy parses
# (`haproxy -c`, when Debian's haproxy is installed).
#   tests/deploy/make_config_refusals.sh SOURCE_DIR
set -uo pipefail
src=${1:?usage: make_config_refusals.sh SOURCE_DIR}
make_config="$src/deploy/haproxy/make-config"
failures=0
refused() {  # EXPECTED_TEXT ARGS...
  local want=$1
  shift
  local out rc
  out=$("$make_config" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -ne 2 ] || [[ "$out" != *"$want"* ]]; then
    echo "FAIL: make-config $* exited $rc with: $out (expected 2 and '$want')"
    failures=$((failures + 1))
  else
    echo "ok: make-config $* -> $out"
  fi
}
refused "--replica takes HOST:PORT:AGENT_PORT" --listen 127.0.0.1:8080 --replica 127.0.0.1:8081
refused "got 'localhost:abc:def'" --listen 127.0.0.1:8080 --replica localhost:abc:def
refused "got '127.0.0.1:8081:9081:1'" --listen 127.0.0.1:8080 --replica 127.0.0.1:8081:9081:1
refused "got ':8081:9081'" --listen 127.0.0.1:8080 --replica :8081:9081
refused "got '127.0.0.1:8081:70000'" --listen 127.0.0.1:8080 --replica 127.0.0.1:8081:70000
refused "--listen takes ADDR:PORT" --listen 8080 --replica 127.0.0.1:8081:9081
# A breaker's inputs: words slipped into the file, a comment, a port past an int, a flag last.
refused "got 'host name:8081:9081'" --listen 127.0.0.1:8080 --replica 'host name:8081:9081'
refused "got 'h#x:8081:9081'" --listen 127.0.0.1:8080 --replica 'h#x:8081:9081'
refused "--listen takes ADDR:PORT" --listen '1.2.3.4 ssl crt /x:8080' --replica 127.0.0.1:8081:9081
refused "got '127.0.0.1:99999999999999999999:9081'" --listen :8080 \
  --replica 127.0.0.1:99999999999999999999:9081
refused "--stats needs a value" --listen 127.0.0.1:8080 --replica 127.0.0.1:8081:9081 --stats
refused "--replica needs a value" --listen 127.0.0.1:8080 --replica
refused "--stats takes ADDR:PORT" --listen 127.0.0.1:8080 --stats 127.0.0.1:x \
  --replica 127.0.0.1:8081:9081
# Session 8's breaker: one replica twice, an agent port equal to the HTTP port, the stats page on
# the frontend's port.
refused "--replica 127.0.0.1:8081 is given twice" --listen :8080 --replica 127.0.0.1:8081:9081 \
  --replica 127.0.0.1:8081:9082
refused "the agent port is the HTTP port" --listen :8080 --replica 127.0.0.1:8081:8081
refused "are one port" --listen 127.0.0.1:8080 --stats 127.0.0.1:8080 --replica 127.0.0.1:8081:9081
refused "are one port" --listen :8080 --stats 127.0.0.1:8080 --replica 127.0.0.1:8081:9081

cfg=$(mktemp)
trap 'rm -f "$cfg"' EXIT
if ! "$make_config" --listen :8080 --stats '[::1]:8404' \
  --replica 127.0.0.1:8081:9081 --replica localhost:8082:9082 --replica '[::1]:8083:9083' >"$cfg"; then
  echo "FAIL: make-config refused good replicas"
  failures=$((failures + 1))
elif ! grep -q "server clef3 \[::1\]:8083 check .* agent-port 9083 " "$cfg"; then
  echo "FAIL: the IPv6 replica is not written as [::1]:8083 with agent port 9083:"
  grep "server clef3" "$cfg"
  failures=$((failures + 1))
elif command -v haproxy >/dev/null; then
  if haproxy -c -f "$cfg" >/dev/null 2>&1; then
    echo "ok: haproxy -c accepts the generated config"
  else
    echo "FAIL: haproxy -c refuses the generated config:"
    haproxy -c -f "$cfg"
    failures=$((failures + 1))
  fi
else
  echo "(no haproxy here: the generated config is not parsed)"
fi
[ "$failures" -eq 0 ] && echo "make-config refusals: all passed"
exit $((failures > 0))
