#!/usr/bin/env bash
# Soak of `clef serve` (issue 28, item 5): DURATION of wrk with a request mix against a server at
# --parallel 4 with the state cache on, beside clients that abort their requests, then:
#   - every answer equal (status and body, byte for byte) to a solo run of the same request on a
#     cold reference server (--parallel 1, no state cache);
#   - the server's RSS flat: after the warm-up (the first WARMUP seconds) within 5 %;
#   - still healthy at the end, and SIGTERM drains and exits 0.
# The mix: text states, JSON states, images, one state asked four different question sets
# (state-cache hits), and malformed requests (their 400s are compared too).
#
# usage: bench/soak.sh [CLEF_BINARY] [-- extra `clef serve` args]   (default: --demo)
# environment: DURATION (600 s), WARMUP (60 s), CONNECTIONS (8), SAMPLE (10 s between RSS samples)
# Exit 0 when every check holds, 1 otherwise.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=bench/serve_lib.sh
source "$here/serve_lib.sh"
clef="${CLEF_BIN:-$here/../build/clef}"
if [[ $# -gt 0 && "$1" != "--" ]]; then clef="$1"; shift; fi
[[ "${1:-}" == "--" ]] && shift
serve_args=("$@")
[[ ${#serve_args[@]} -eq 0 ]] && serve_args=(--demo)
duration="${DURATION:-600}"
warmup="${WARMUP:-60}"
connections="${CONNECTIONS:-8}"
sample="${SAMPLE:-10}"

command -v wrk >/dev/null || { echo "soak.sh: wrk is not installed (apt-get install wrk)" >&2; exit 2; }
[[ -x "$clef" ]] || { echo "soak.sh: no clef binary at $clef" >&2; exit 2; }

work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# --- the mix ------------------------------------------------------------------------------------
mix="$work/mix"
mkdir -p "$mix"
n=0
add() { printf '%s' "$1" >"$mix/$n.body"; n=$((n + 1)); }
questions='"questions":{"department":{"type":"choice","criteria":{"engineering":"Backend, infrastructure","sales":"Pricing, contracts","support":"Customer help"}},"urgency":{"type":"score","criteria":["low","medium","high","critical"]},"outage":{"type":"noul"}}'
for state in "Production database is down, customers cannot log in" \
             "Invoice 4411 was charged twice, please refund one" \
             "How do I export my data to CSV?" \
             "$(printf 'The nightly job failed again. %.0s' $(seq 40))"; do
  add "{\"state\":\"$state\",$questions}"
done
add "{\"state\":{\"ticket\":7,\"text\":\"Refund please, charged twice\",\"tags\":[\"billing\"]},$questions}"
add "{\"state\":{\"ticket\":8,\"events\":[{\"t\":1,\"msg\":\"disk 91%\"},{\"t\":2,\"msg\":\"disk 99%\"}]},$questions}"
png="$(base64 -w0 "$here/../tests/data/oracle/coreai/images/shapes_224.png")"
add "{\"state\":\"What is in the picture?\",\"images\":[\"data:image/png;base64,$png\"],\"questions\":{\"shape\":{\"type\":\"choice\",\"criteria\":{\"circle\":\"a circle\",\"square\":\"a square\"}},\"colourful\":{\"type\":\"noul\"}}}"
add "{\"state\":\"Is this urgent?\",\"images\":[\"data:image/png;base64,$png\"],$questions}"
shared="Customer 311 reports the mobile app crashes on login since the 4.2 update; 40 tickets today."
for q in '"a":{"type":"noul"}' '"b":{"type":"score","criteria":["low","high"]}' \
         '"c":{"type":"choice","criteria":{"bug":"a defect","question":"a how-to"}}' \
         '"d":{"type":"noul"},"e":{"type":"noul"}'; do
  add "{\"state\":\"$shared\",\"questions\":{$q}}"
done
add '{"state":"x","questions":{"q":{"type":"noul","criteria":7}}}'
add '{"state":"x","questions":'
add '{"state":"x","questions":{"q":{"type":"maybe"}}}'

# --- solo answers on a cold reference server ----------------------------------------------------
start_clef "$clef" "$work" reference --threads 1 --parallel 1 --state-cache-mb 0 "${serve_args[@]}"
pids+=("$CLEF_PID")
for ((k = 0; k < n; ++k)); do
  curl -s -o "$mix/$k.answer" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "@$mix/$k.body" "http://127.0.0.1:$CLEF_PORT/v1/decisions" >"$mix/$k.status"
done
stop_clef "$CLEF_PID" >/dev/null || true
echo "mix: $n requests; solo statuses: $(for f in "$mix"/*.status; do cat "$f"; echo; done | sort | uniq -c | tr -s ' \n' ' ')"

# --- the soak -----------------------------------------------------------------------------------
start_clef "$clef" "$work" soak --threads 1 --parallel 4 --queue-size 256 "${serve_args[@]}"
pid="$CLEF_PID"
port="$CLEF_PORT"
pids+=("$pid")
echo "clef serve --parallel 4 ${serve_args[*]} on port $port (pid $pid): ${duration} s of wrk -c$connections"

# Clients that give up: a long request cut off after 30 ms, twice a second.
long="{\"state\":\"$(printf 'An unusually long incident report line. %.0s' $(seq 300))\",$questions}"
( end=$((SECONDS + duration))
  while ((SECONDS < end)); do
    curl -s -o /dev/null --max-time 0.03 -H 'Content-Type: application/json' -d "$long" \
      "http://127.0.0.1:$port/v1/decisions" || true
    sleep 0.5
  done ) &
pids+=("$!")
# RSS every SAMPLE seconds.
( end=$((SECONDS + duration))
  while ((SECONDS < end)); do echo "$SECONDS $(rss_kib "$pid")"; sleep "$sample"; done ) >"$work/rss" &
pids+=("$!")

CLEF_MIX_DIR="$mix" timeout $((duration + 60)) wrk -t2 -c"$connections" -d"${duration}s" \
  --timeout 60s -s "$here/soak_client.lua" "http://127.0.0.1:$port" | tee "$work/wrk.out" | grep '^CLEF_SOAK'
wait "${pids[-1]}" "${pids[-2]}" 2>/dev/null || true
line="$(grep '^CLEF_SOAK' "$work/wrk.out")"
value() { sed "s/.*$1=\([0-9.]*\).*/\1/" <<<"$line"; }

# --- the checks ---------------------------------------------------------------------------------
ok=1
[[ "$(value mismatched)" == "0" ]] || { echo "FAIL: answers differ from the solo runs"; ok=0; }
[[ "$(value unexpected_status)" == "0" ]] || { echo "FAIL: statuses differ from the solo runs"; ok=0; }
[[ "$(value socket_errors)" == "0" ]] || { echo "FAIL: wrk saw socket errors"; ok=0; }
read -r first_t first_rss < <(awk -v w="$warmup" '$1 >= w {print; exit}' "$work/rss")
read -r lo hi last < <(awk -v w="$warmup" '$1 >= w {if (!lo || $2 < lo) lo = $2; if ($2 > hi) hi = $2; last = $2}
  END {print lo, hi, last}' "$work/rss")
echo "RSS: $(head -1 "$work/rss" | cut -d' ' -f2) KiB at start; after ${warmup} s: ${first_rss} KiB," \
  "then min ${lo} / max ${hi} / last ${last} KiB ($(wc -l <"$work/rss") samples)"
awk -v lo="$lo" -v hi="$hi" 'BEGIN {exit !(hi <= lo * 1.05)}' ||
  { echo "FAIL: RSS grew more than 5 % after the warm-up"; ok=0; }
aborted="$(grep -c 'status=499' "$work/soak.log" || true)"
statuses="$(sed -n 's/.*access .*path=\/v1\/decisions status=\([0-9]*\).*/\1/p' "$work/soak.log" | sort | uniq -c | tr -s ' \n' ' ')"
echo "decisions in the access log, by status:$statuses(499: $aborted clients that gave up)"
[[ "$(health_of "$port")" == "200" ]] || { echo "FAIL: not healthy after the soak"; ok=0; }
if stop_clef "$pid"; then echo "server drained and exited 0"; else echo "FAIL: exit status $?"; ok=0; fi
((ok)) && echo "soak: PASS" || { echo "soak: FAIL"; exit 1; }
