#!/usr/bin/env bash
# The long fuzz run of every target (fuzz/README.md): builds them as the tests do
# (tests/json/fuzz_smoke.sh, 1 s each, in WORK/build: the smoke run starts from fresh corpora of
# its own), then runs each one on one core until RUNS executions or SECONDS seconds, whichever
# comes first, keeping its corpus in WORK/corpus_<target> between runs (a new one is seeded from
# the smoke run's).
# Prints one summary line per target: executions, seconds, coverage, features, corpus size, and
# whether it found anything (the reproducer is then WORK/<target>-crash-*).
#
# usage: fuzz/long_run.sh WORK [SECONDS per target, default 3600] [RUNS, default 10000000] [TARGET...]
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work=${1:?usage: fuzz/long_run.sh WORK [SECONDS] [RUNS] [TARGET...]}
seconds=${2:-3600}
runs=${3:-10000000}
shift $(( $# < 3 ? $# : 3 ))
build="$work/build"
mkdir -p "$work"
"$src/tests/json/fuzz_smoke.sh" "$src" "$build" 1 >"$work/build.log" 2>&1 || {
  echo "build or smoke run failed: $work/build.log" >&2
  exit 1
}
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  for t in "$src"/fuzz/*_fuzzer.cpp; do targets+=("$(basename "${t%.cpp}")"); done
fi
for name in "${targets[@]}"; do
  args=(-runs="$runs" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048
        -print_final_stats=1 -artifact_prefix="$work/$name-")
  [[ "$name" == json_parse* || "$name" == request* ]] && args+=(-dict="$src/fuzz/json.dict")
  [[ "$name" == server_http* ]] && args+=(-dict="$src/fuzz/http.dict")
  corpus="$work/corpus_$name"
  [[ -d "$corpus" ]] || cp -r "$build/corpus_$name" "$corpus"
  start=$(date +%s)
  result=clean
  "$build/$name" "${args[@]}" "$corpus" >"$work/$name.long.log" 2>&1 || result=FINDING
  end=$(date +%s)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name.long.log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$work/$name.long.log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$last")
  echo "$name: ${execs:-?} executions in $((end - start)) s, cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}, $result"
done
