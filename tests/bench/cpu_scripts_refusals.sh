#!/usr/bin/env bash
# The CPU comparison scripts (bench/cpu_vs_llama.sh, bench/cpu_vs_ik_llama.sh) refuse before any
# work, exit 2 and say why: a build directory without clef (a newcomer's first try printed a bare
# `cd: ...: No such file or directory`), no IK_LLAMA_BENCH, one that is not ik_llama.cpp's
# llama-bench (no -rtr flag), an ISA it does not build for; the kernel benches (clef_delta_net_bench,
# clef_repacked_gemm_bench) refuse bad arguments with their usage, and the delta-net one measures a
# tiny shape. Seconds; builds nothing.
#   tests/bench/cpu_scripts_refusals.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=${1:?usage: cpu_scripts_refusals.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: cpu_scripts_refusals.sh SOURCE_DIR BUILD_DIR}
failures=0
refused() {  # EXPECTED_TEXT ENV_ASSIGNMENT SCRIPT ARGS...
  local want=$1 env_assignment=$2 script=$3
  shift 3
  local out rc
  out=$(env "$env_assignment" bash "$src/bench/$script" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -ne 2 ] || [[ "$out" != *"$want"* ]]; then
    echo "FAIL: $env_assignment $script $* exited $rc with: $out (expected 2 and '$want')"
    failures=$((failures + 1))
  else
    echo "ok: $script $*: $out"
  fi
}
nobuild=$(mktemp -d)
trap 'rm -rf "$nobuild"' EXIT
refused "no clef in $nobuild" IK_LLAMA_BENCH=/bin/true cpu_vs_ik_llama.sh "$nobuild"
refused "no clef in $nobuild" STOCK_DIR="$nobuild/stock" cpu_vs_llama.sh "$nobuild"
refused "set IK_LLAMA_BENCH" IK_LLAMA_BENCH= cpu_vs_ik_llama.sh "$build"
refused "set IK_LLAMA_BENCH" IK_LLAMA_BENCH="$nobuild/missing" cpu_vs_ik_llama.sh "$build"
refused "has no -rtr flag" IK_LLAMA_BENCH=/bin/true cpu_vs_ik_llama.sh "$build"
refused "ISA must be native, avx2 or avx2-vnni" ISA=avx512 cpu_vs_llama.sh "$build"
bench_refused() {  # BINARY ARGS...: exit 2 with the usage line
  local bin=$1
  shift
  local out rc
  out=$("$build/bench/$bin" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -ne 2 ] || [[ "$out" != *"usage: "* ]]; then
    echo "FAIL: $bin $* exited $rc with: $out (expected 2 and its usage)"
    failures=$((failures + 1))
  else
    echo "ok: $bin $*: refused"
  fi
}
bench_refused clef_delta_net_bench 0
bench_refused clef_delta_net_bench 128 0
bench_refused clef_repacked_gemm_bench bogus
bench_refused clef_repacked_gemm_bench q4_K 100
out=$("$build/bench/clef_delta_net_bench" 64 2 4 1 2>/dev/null)
if [[ "$out" != "delta_net  S 64  heads 2  tokens 4 "*" ns a state row" ]]; then
  echo "FAIL: clef_delta_net_bench 64 2 4 1 printed: $out"
  failures=$((failures + 1))
else
  echo "ok: $out"
fi
exit $((failures > 0))
