#!/usr/bin/env bash
# Load test of `clef serve` on loopback, bounded in time:
#   throughput and p50/p99 latency at 1, 4 and 16 connections (wrk + bench/load_client.lua),
#   then the server's RSS before and after 10,000 requests.
#
# usage: bench/load.sh [CLEF_BINARY] [-- extra `clef serve` args]
#   CLEF_BINARY   default: build/clef (or $CLEF_BIN)
#   serve args    default: --demo (the random-weight tiny test model, generated once)
# environment:    DURATION (per connection count, default 5s), TOTAL (default 10000),
#                 TOTAL_TIMEOUT (seconds for the TOTAL run, default 300)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
clef="${CLEF_BIN:-$here/../build/clef}"
if [[ $# -gt 0 && "$1" != "--" ]]; then clef="$1"; shift; fi
[[ "${1:-}" == "--" ]] && shift
serve_args=("$@")
[[ ${#serve_args[@]} -eq 0 ]] && serve_args=(--demo)
duration="${DURATION:-5s}"
total="${TOTAL:-10000}"
total_timeout="${TOTAL_TIMEOUT:-300}"

command -v wrk >/dev/null || { echo "load.sh: wrk is not installed (apt-get install wrk)" >&2; exit 2; }
[[ -x "$clef" ]] || { echo "load.sh: no clef binary at $clef" >&2; exit 2; }

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# The access log costs a write per request; keep it in a file, not the terminal.
"$clef" serve --host 127.0.0.1 --port 0 --queue-size 256 "${serve_args[@]}" \
  >"$work/stdout" 2>"$work/server.log" &
server_pid=$!

port=""
for _ in $(seq 600); do  # generating the demo model on first use can take a while
  port="$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/stdout" | head -1)"
  [[ -n "$port" ]] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.1
done
[[ -n "$port" ]] || { echo "load.sh: the server printed no port" >&2; exit 1; }

health() {  # GET /health over bash's /dev/tcp; prints the status code
  exec 3<>"/dev/tcp/127.0.0.1/$port" || { echo 000; return; }
  printf 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
  head -1 <&3 | cut -d' ' -f2
  exec 3<&-
}
for _ in $(seq 600); do
  [[ "$(health 2>/dev/null)" == "200" ]] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.1
done
[[ "$(health)" == "200" ]] || { echo "load.sh: the server never became healthy" >&2; exit 1; }

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status"; }
url="http://127.0.0.1:$port"
echo "clef serve ${serve_args[*]} on $url (pid $server_pid)"

run_wrk() {  # connections duration -> the CLEF summary line
  local c="$1" d="$2"
  timeout $(( ${d%s} + 30 )) wrk -t1 -c"$c" -d"$d" --timeout 30s -s "$here/load_client.lua" "$url" \
    | grep '^CLEF'
}

rss_before="$(rss_kib)"
printf '%-12s %10s %10s %10s %8s\n' connections "req/s" "p50 ms" "p99 ms" "non-200"
for c in 1 4 16; do
  line="$(run_wrk "$c" "$duration")"
  rps="$(sed 's/.*rps=\([0-9.]*\).*/\1/' <<<"$line")"
  p50="$(sed 's/.*p50_ms=\([0-9.]*\).*/\1/' <<<"$line")"
  p99="$(sed 's/.*p99_ms=\([0-9.]*\).*/\1/' <<<"$line")"
  bad="$(sed 's/.*non_200=\([0-9]*\).*/\1/' <<<"$line")"
  printf '%-12s %10s %10s %10s %8s\n' "$c" "$rps" "$p50" "$p99" "$bad"
done

rss_mid="$(rss_kib)"
line="$(CLEF_MAX_REQUESTS="$total" run_wrk 4 "${total_timeout}s")"
done_requests="$(sed 's/.*requests=\([0-9]*\).*/\1/' <<<"$line")"
rss_after="$(rss_kib)"
echo "RSS: ${rss_before} KiB at start, ${rss_mid} KiB after the sweep," \
  "${rss_after} KiB after ${done_requests} more requests (target $total, 4 connections)"

kill -TERM "$server_pid"
for _ in $(seq 300); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$server_pid" 2>/dev/null; then
  echo "load.sh: the server did not exit within 30 s of SIGTERM" >&2
  exit 1
fi
wait "$server_pid" && echo "server drained and exited 0" || echo "server exit status $?"
server_pid=""
