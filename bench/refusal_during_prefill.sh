#!/usr/bin/env bash
# How long a malformed request waits for its 400 while a ~4,000-token decision runs (issue 10:
# requests are prepared on the HTTP threads, so the answer should not wait for the prefill).
# usage: bench/refusal_during_prefill.sh CLEF_BINARY MODEL_DIR   (e.g. a `clef make-test-model DIR
# --preset small` model); loopback only, three tries, then SIGTERM.
set -euo pipefail
clef="$1"; dir="$2"
work="$(mktemp -d)"
"$clef" serve --host 127.0.0.1 --port 0 --threads 1 --context-size 8192 --model-dir "$dir" >$work/ov.out 2>$work/ov.err &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 300); do port=$(sed -n 's|.*127\.0\.0\.1:\([0-9]*\).*|\1|p' $work/ov.out | head -1); [ -n "$port" ] && break; sleep 0.1; done
for _ in $(seq 600); do [ "$(curl -s -o /dev/null -w '%{http_code}' localhost:$port/health)" = 200 ] && break; sleep 0.1; done
state=$(python3 -c "print(' '.join('w%d' % (i % 10) for i in range(1950)))")
printf '{"state":"%s","questions":{"outage":{"type":"noul"}}}' "$state" > $work/long.json
for k in 1 2 3; do
  curl -s -o /dev/null -w 'long: %{http_code} %{time_total}s\n' localhost:$port/v1/decisions -H 'Content-Type: application/json' --data-binary @$work/long.json &
  lp=$!
  for _ in $(seq 2000); do curl -s localhost:$port/metrics | grep -q '^clef_decisions_in_flight 1' && break; sleep 0.002; done
  curl -s -o /dev/null -w 'malformed: %{http_code} %{time_total}s\n' localhost:$port/v1/decisions -H 'Content-Type: application/json' -d '{"state":"x","questions":{"q":{"type":"maybe"}}}'
  wait $lp
done
