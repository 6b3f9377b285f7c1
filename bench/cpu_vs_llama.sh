#!/usr/bin/env bash
# Issue 42's CPU table: clef's whole decision against llama.cpp's own prefill of the same number of
# tokens, the pinned tree built as llama.cpp builds by default (GGML_NATIVE, without clef's patches
# and with AMX off: what a user of llama.cpp gets), measured side by side in one run on the same
# test model files. Run it alone on an idle machine.
#
#   bash bench/cpu_vs_llama.sh [BUILD_DIR]                           (default build/)
# Env: MODELS (default "shape-9b shape-0.8b:Q4_K_M"), SIZES (tokens, default "1024 4096"),
#      REPS (default 2), THREADS (default 2), CLEF_SET (extra `--set` for clef, e.g. cpu_amx=off),
#      STOCK_DIR (default BUILD_DIR/stock-llama), STOCK_CFLAGS (extra flags for the stock build),
#      ISA (native, avx2 or avx2-vnni: both sides' ggml-cpu built for that instruction set,
#      bench/cpu_bench_lib.sh; e.g. `ISA=avx2 bash bench/cpu_vs_llama.sh` on an AVX-512 CPU).
# Prints per model and size: clef's decision ms (the `timings` line of `clef ask --verbose`: parse,
# record, backbone, head, answers; the load excluded), llama-bench's prefill ms (-p N -n 0, its
# own chunking: -b 512 -ub 512, flash attention off as clef), their medians and the ratio.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Settings, test models, requests and timings (bench/cpu_bench_lib.sh).
source "$root/bench/cpu_bench_lib.sh" "${1:-}"
stock=${STOCK_DIR:-$build/stock-llama}

# 1. The stock pinned tree: the npm package's bundle at the pinned commit with node-llama-cpp's
#    own patches (scripts/fetch-llama without clef's), built with llama.cpp's defaults.
source "$root/cmake/llama-pin.env"
if [[ ! -x "$stock/build/bin/llama-bench" ]]; then
  echo "== building the stock pinned llama.cpp (llama-bench) into $stock" >&2
  tgz="$root/third_party/.cache/node-llama-cpp-$NODE_LLAMA_CPP_VERSION.tgz"
  [[ -f "$tgz" ]] || { echo "no $tgz: run scripts/setup first" >&2; exit 1; }
  rm -rf "$stock" && mkdir -p "$stock"
  tar -xzf "$tgz" -C "$stock" package/llama/gitRelease.bundle package/llama/patches
  git clone -q -n "$stock/package/llama/gitRelease.bundle" "$stock/src"
  git -C "$stock/src" -c advice.detachedHead=false checkout -q "$LLAMA_COMMIT"
  for p in "$stock"/package/llama/patches/*.diff; do [[ -e "$p" ]] && git -C "$stock/src" apply "$p"; done
  # AMX off as clef's issue asks of the yardstick (GGML_NATIVE turns it on on an AMX CPU).
  cmake -S "$stock/src" -B "$stock/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF -DCMAKE_C_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16 ${STOCK_CFLAGS:-}" \
    -DCMAKE_CXX_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16 ${STOCK_CFLAGS:-}" > "$stock/cmake.log"
  cmake --build "$stock/build" --target llama-bench -j "$(nproc)" > "$stock/build.log"
fi
bench="$stock/build/bin/llama-bench"
# ISA other than native: both trees' ggml-cpu built for it, in place of their native ones.
clef_isa_libs
stock_libs=""
if [[ "$isa" != native ]]; then stock_libs=$(isa_ggml_cpu "$stock/src" "$build/isa-$isa/stock"); fi

# 2. Test models and requests of about N tokens: bench/cpu_bench_lib.sh.

echo "== $(date -u '+%F %T') commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'), $(lscpu | sed -n 's/^Model name: *//p'), amx_int8 flags: $(grep -c amx_int8 /proc/cpuinfo || true), $threads threads, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== ISA $isa; clef: $(with_libs "$clef_libs" "$clef" info "$(model_dir "${models%% *}")" 2>/dev/null | sed -n 's/^CPU matrix path/CPU matrix path/p')"
printf '%-22s %7s %14s %16s %8s\n' model tokens "clef ms" "llama.cpp ms" ratio
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for m in $models; do
  dir=$(model_dir "$m")
  for n in $sizes; do
    request_of "$n" "$work/req.json"
    : > "$work/clef.ms"; : > "$work/llama.ms"
    tokens=0
    for _ in $(seq "$reps"); do
      tokens=$(clef_decision "$dir" "$work/req.json" "$threads" "$work/clef.ms")
      with_libs "$stock_libs" llama_bench_prefill_ms "$bench" "$dir/backbone.gguf" "$tokens" "$threads" >> "$work/llama.ms"
    done
    c=$(median < "$work/clef.ms"); l=$(median < "$work/llama.ms")
    printf '%-22s %7s %14.0f %16.0f %8.2f\n' "$m" "$tokens" "$c" "$l" "$(awk -v a="$c" -v b="$l" 'BEGIN {print a / b}')"
  done
done
