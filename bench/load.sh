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

# shellcheck source=bench/serve_lib.sh
source "$here/serve_lib.sh"
work="$(mktemp -d)"
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && stop_clef "$server_pid" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

start_clef "$clef" "$work" server --queue-size 256 "${serve_args[@]}" || exit 1
server_pid="$CLEF_PID"
port="$CLEF_PORT"
url="http://127.0.0.1:$port"
echo "clef serve ${serve_args[*]} on $url (pid $server_pid)"

run_wrk() {  # connections duration -> the CLEF summary line
  local c="$1" d="$2"
  timeout $(( ${d%s} + 30 )) wrk -t1 -c"$c" -d"$d" --timeout 30s -s "$here/load_client.lua" "$url" \
    | grep '^CLEF'
}

rss_before="$(rss_kib "$server_pid")"
printf '%-12s %10s %10s %10s %8s\n' connections "req/s" "p50 ms" "p99 ms" "non-200"
for c in 1 4 16; do
  line="$(run_wrk "$c" "$duration")"
  rps="$(sed 's/.*rps=\([0-9.]*\).*/\1/' <<<"$line")"
  p50="$(sed 's/.*p50_ms=\([0-9.]*\).*/\1/' <<<"$line")"
  p99="$(sed 's/.*p99_ms=\([0-9.]*\).*/\1/' <<<"$line")"
  bad="$(sed 's/.*non_200=\([0-9]*\).*/\1/' <<<"$line")"
  printf '%-12s %10s %10s %10s %8s\n' "$c" "$rps" "$p50" "$p99" "$bad"
done

rss_mid="$(rss_kib "$server_pid")"
line="$(CLEF_MAX_REQUESTS="$total" run_wrk 4 "${total_timeout}s")"
done_requests="$(sed 's/.*requests=\([0-9]*\).*/\1/' <<<"$line")"
rss_after="$(rss_kib "$server_pid")"
echo "RSS: ${rss_before} KiB at start, ${rss_mid} KiB after the sweep," \
  "${rss_after} KiB after ${done_requests} more requests (target $total, 4 connections)"

if stop_clef "$server_pid"; then echo "server drained and exited 0"; else echo "server exit status $?"; fi
server_pid=""
