#!/usr/bin/env bash
# What one request's body costs the server in memory (issue 52, item 2): `clef serve --demo` (the
# tiny model; the body's cost does not depend on the model), then for each body below the peak
# resident set (VmHWM) before and after, one request alone, then SIX at once; every answer's
# status. Each case runs on a fresh server so its peak is its own. Run it alone.
#   bash bench/request_memory.sh [CLEF_BINARY] [extra serve args...]   (default build/clef)
# Bodies: "ints" = 3,000 integers of 4,300 digits in `state` (12.9 MB), "string" = one 15 MB
# string `state`, "small-ints" = 2,000,000 one-digit integers (4 MB), "words" = 15 MB of text
# with spaces.
set -euo pipefail
clef=${1:-build/clef}
shift || true
cd "$(dirname "$0")/.."
source bench/serve_lib.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
q = {"outage": {"type": "noul"}}
def write(name, state):
    with open(f"{work}/{name}.json", "w") as f:
        json.dump({"state": state, "questions": q}, f)
write("ints", [int("7" * 4300)] * 3000)
write("string", "x" * 15_000_000)
write("small-ints", [1] * 2_000_000)
write("words", " ".join(["word"] * 3_000_000))
PY

hwm() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status"; }
echo "== $(date -u '+%F %T') $clef, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) CPUs"
for body in ints string small-ints words; do
  bytes=$(stat -c %s "$work/$body.json")
  for n in 1 6; do
    start_clef "$clef" "$work" "serve-$body-$n" --demo "$@"
    before=$(hwm "$CLEF_PID")
    codes=()
    pids=()
    for i in $(seq "$n"); do
      curl -s -o "$work/answer-$i" -w "%{http_code}\n" "localhost:$CLEF_PORT/v1/decisions" \
        -H 'content-type: application/json' --data-binary @"$work/$body.json" > "$work/code-$i" &
      pids+=($!)
    done
    wait "${pids[@]}" || true
    for i in $(seq "$n"); do codes+=("$(cat "$work/code-$i")"); done
    after=$(hwm "$CLEF_PID")
    awk -v b="$body" -v bytes="$bytes" -v n="$n" -v before="$before" -v after="$after" \
      -v codes="${codes[*]}" 'BEGIN {
        printf "%-10s body %5.1f MB x%d: peak RSS %5d -> %5d MiB (+%d MiB, %.1fx the bodies); statuses %s\n",
          b, bytes / 1e6, n, before / 1024, after / 1024, (after - before) / 1024,
          (after - before) * 1024 / (bytes * n), codes }'
    grep -ho '"message":"[^"]*"' "$work"/answer-* 2>/dev/null | sort | uniq -c | head -3 || true
    rm -f "$work"/answer-* "$work"/code-*
    stop_clef "$CLEF_PID" > /dev/null || true
  done
done
