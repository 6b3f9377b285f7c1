#!/usr/bin/env bash
# Resident memory of `clef serve` after N decisions (the card example; decision i > 1 has the
# card's state with " (ticket i)" appended, so each is a new state the state cache keeps):
# /proc/PID/smaps_rollup's Rss, file-backed and anonymous parts and the peak (VmHWM), and the
# served memory plan. Run it alone.
#   [DECISIONS=N] [CONTEXT=C] bash bench/serve_rss.sh LABEL [LD_LIBRARY_PATH] [MODEL_DIR]
# (default model: build/bench-models/shape-9b, made by bench/cpu_vs_llama.sh; LD_LIBRARY_PATH
# swaps in another libllama/libggml build to compare).
set -u
label=$1; lib=${2:-}; model=${3:-build/bench-models/shape-9b}
cd "$(dirname "$0")/.."
port=${PORT:-18377}
decisions=${DECISIONS:-1}
context=()
[ -n "${CONTEXT:-}" ] && context=(--context-size "$CONTEXT")
log="${TMPDIR:-/tmp}/serve_rss-$label.log"
LD_LIBRARY_PATH=$lib ./build/clef serve --model-dir "$model" --threads 2 --port $port "${context[@]}" > "$log" 2>&1 &
pid=$!
for i in $(seq 900); do curl -sf -o /dev/null localhost:$port/health && break; sleep 1; done
for i in $(seq "$decisions"); do
  python3 - "$i" > "${TMPDIR:-/tmp}/serve_rss-request.json" <<'PY'
import json, sys
i = int(sys.argv[1])
request = json.load(open("examples/card.json"))
if i > 1:
    request["state"] += f" (ticket {i})"
print(json.dumps(request))
PY
  curl -s -o /dev/null -w "%{http_code} " localhost:$port/v1/decisions -H 'content-type: application/json' -d @"${TMPDIR:-/tmp}/serve_rss-request.json"
done
echo "$label ($decisions decisions): $(grep -E '^(Rss|Anonymous|Pss_File)' /proc/$pid/smaps_rollup | tr -s ' ' | tr '\n' ' ') VmHWM $(grep VmHWM /proc/$pid/status | tr -s ' ')"
grep -o 'memory: .*' "$log" | head -1
kill $pid; wait $pid 2>/dev/null
