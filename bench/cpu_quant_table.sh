#!/usr/bin/env bash
# Issue 19's CPU table: for each backbone quantization of the shape-0.8b test model, clef's whole
# decision beside llama.cpp's raw prefill of the same ids with its library defaults (repacking on,
# llama_context_default_params() threads, 4) and with the threads llama.cpp's tools default to (the
# physical cores), measured side by side in one clef_bench run (decision: no state cache;
# decision_default: the default state cache, a new state each time); then what one busy process
# on the same cores does to a decision. Run it alone on an idle machine.
# Its llama.cpp side is the library clef links, with clef's kernel patches (cmake/patches/): a
# measure of clef's own overhead. Against llama.cpp as its users build it (the stock pinned tree,
# AMX off) see bench/cpu_vs_llama.sh (issue 42).
#
#   bash bench/cpu_quant_table.sh [BUILD_DIR]      (default build/)
# Env: QUANTS (default "F16 Q8_0 Q4_K_M"), REPS (benchmark repetitions, default 2),
#      CONTENTION=0 skips the contention part.
set -euo pipefail
build=${1:-build}
quants=${QUANTS:-F16 Q8_0 Q4_K_M}
reps=${REPS:-2}
models="$build/bench-models"
mkdir -p "$models"

model_dir() {
  local dir="$models/shape-0.8b-$1"
  if [[ ! -f "$dir/joint_head_config.json" ]]; then
    "$build/clef" make-test-model "$dir" --preset shape-0.8b --quant "$1" >&2
  fi
  echo "$dir"
}

echo "== $(date -u '+%F %T') commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
for q in $quants; do
  dir=$(model_dir "$q")
  echo
  echo "== shape-0.8b $q"
  CLEF_BENCH_MODEL_DIR="$dir" "$build/bench/clef_bench" \
    --benchmark_filter='raw_prefill_llama_(defaults|tools)/(60|1800)$|decision(_default)?/(60|1800)$' \
    --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
    --benchmark_min_time=0.1 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep -E '_median|ERROR|^state|^[0-9]+ |^model'
done

[[ "${CONTENTION:-1}" == 0 ]] && exit 0

# A decision (the 60-word record) idle and beside one process that keeps one core busy. The busy
# process takes 1 of the machine's CPUs: "no worse than its share" means busy/idle <= n / (n - 1).
dir=$(model_dir Q4_K_M)
decision_ms() {
  CLEF_BENCH_MODEL_DIR="$dir" "$@" "$build/bench/clef_bench" --benchmark_filter='^BM_decision/60$' \
    --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
    --benchmark_min_time=0.1 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g' |
    awk '$1 ~ /_median$/ {print $2 + 0}'
}
busy_loop() { while :; do :; done; }
echo
echo "== contention (Q4_K_M, 60-word record, median of $reps, ms)"
printf '%-34s %10s %10s %8s\n' setting idle busy ratio
for setting in "default" "OMP_WAIT_POLICY=passive" "CLEF_BENCH_THREADS=1"; do
  envs=()
  [[ "$setting" != default ]] && envs=(env "$setting")
  idle=$(decision_ms "${envs[@]}")
  busy_loop &
  busy=$!
  sleep 1
  loaded=$(decision_ms "${envs[@]}")
  kill "$busy"
  wait "$busy" 2>/dev/null || true
  printf '%-34s %10.1f %10.1f %8.2f\n' "$setting" "$idle" "$loaded" "$(awk -v a="$loaded" -v b="$idle" 'BEGIN {print a / b}')"
done
