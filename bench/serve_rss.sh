#!/usr/bin/env bash
# Resident memory of `clef serve` after one decision (the card example): /proc/PID/smaps_rollup's
# Rss, file-backed and anonymous parts and the peak (VmHWM). Run it alone.
#   bash bench/serve_rss.sh LABEL [LD_LIBRARY_PATH] [MODEL_DIR]
# (default model: build/bench-models/shape-9b, made by bench/cpu_vs_llama.sh; LD_LIBRARY_PATH
# swaps in another libllama/libggml build to compare).
set -u
label=$1; lib=${2:-}; model=${3:-build/bench-models/shape-9b}
cd "$(dirname "$0")/.."
port=${PORT:-18377}
LD_LIBRARY_PATH=$lib ./build/clef serve --model-dir "$model" --threads 2 --port $port > "${TMPDIR:-/tmp}/serve_rss-$label.log" 2>&1 &
pid=$!
for i in $(seq 600); do curl -sf -o /dev/null localhost:$port/health && break; sleep 1; done
curl -s -o /dev/null -w "%{http_code} " localhost:$port/v1/decisions -H 'content-type: application/json' -d @examples/card.json
echo "$label: $(grep -E '^(Rss|Anonymous|Pss_File)' /proc/$pid/smaps_rollup | tr -s ' ' | tr '\n' ' ') VmHWM $(grep VmHWM /proc/$pid/status | tr -s ' ')"
kill $pid; wait $pid 2>/dev/null
