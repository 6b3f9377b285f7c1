#!/usr/bin/env bash
# Issue 51's peer: clef's whole decision against ik_llama.cpp's prefill (the CPU-first llama.cpp
# fork, MIT, https://github.com/ikawrakow/ik_llama.cpp) of the same number of tokens, on the same
# test model files, side by side in one run. Neither npm nor Debian ships it, and clef never
# vendors it: build it once outside this repository and point this script at the build, e.g.
#   git clone https://github.com/ikawrakow/ik_llama.cpp ~/ik_llama.cpp
#   cmake -S ~/ik_llama.cpp -B ~/ik_llama.cpp/build -G Ninja -DCMAKE_BUILD_TYPE=Release
#   cmake --build ~/ik_llama.cpp/build --target llama-bench      (about 30 minutes on 2 cores; keep
#                                          its defaults: GGML_IQK_FLASH_ATTENTION=OFF fails to link)
# Run it alone on an idle machine.
#
#   IK_LLAMA_BENCH=~/ik_llama.cpp/build/bin/llama-bench bash bench/cpu_vs_ik_llama.sh [BUILD_DIR]
# Env: IK_LLAMA_BENCH (required: its llama-bench), MODELS (default "shape-9b shape-0.8b:Q4_K_M"),
#      SIZES (tokens, default "1024 4096"), REPS (default 2), THREADS (default 2), CLEF_SET,
#      ISA (clef's side only, bench/cpu_bench_lib.sh: build ik_llama.cpp for the same set, e.g.
#      -DGGML_NATIVE=OFF -DGGML_AVX2=ON ... for avx2).
# Prints per model and size: clef's decision ms (bench/cpu_bench_lib.sh), ik_llama.cpp's prefill
# ms with its run-time repacking off and on (-rtr 0 / 1; the better one counts), and the ratio
# of clef's to the better.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Settings, test models, requests and timings (bench/cpu_bench_lib.sh).
source "$root/bench/cpu_bench_lib.sh" "${1:-}"
bench=${IK_LLAMA_BENCH:-}
if [[ -z "$bench" || ! -x "$bench" ]]; then
  echo "error: set IK_LLAMA_BENCH to ik_llama.cpp's built llama-bench (see the top of $0)" >&2
  exit 2
fi
if ! "$bench" --help 2>&1 | grep -q -- '-rtr'; then
  echo "error: $bench has no -rtr flag: not ik_llama.cpp's llama-bench" >&2
  exit 2
fi
clef_isa_libs


echo "== $(date -u '+%F %T') commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'), $(lscpu | sed -n 's/^Model name: *//p'), ISA $isa (clef), $threads threads, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== ik_llama.cpp: $bench ($(git -C "$(dirname "$bench")/../.." rev-parse --short HEAD 2>/dev/null || echo 'commit ?'))"
printf '%-22s %7s %12s %14s %14s %8s\n' model tokens "clef ms" "ik -rtr 0 ms" "ik -rtr 1 ms" ratio
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for m in $models; do
  dir=$(model_dir "$m")
  for n in $sizes; do
    request_of "$n" "$work/req.json"
    : > "$work/clef.ms"; : > "$work/rtr0.ms"; : > "$work/rtr1.ms"
    tokens=0
    for _ in $(seq "$reps"); do
      tokens=$(clef_decision "$dir" "$work/req.json" "$threads" "$work/clef.ms")
      llama_bench_prefill_ms "$bench" "$dir/backbone.gguf" "$tokens" "$threads" -rtr 0 >> "$work/rtr0.ms"
      llama_bench_prefill_ms "$bench" "$dir/backbone.gguf" "$tokens" "$threads" -rtr 1 >> "$work/rtr1.ms"
    done
    c=$(median < "$work/clef.ms"); r0=$(median < "$work/rtr0.ms"); r1=$(median < "$work/rtr1.ms")
    printf '%-22s %7s %12.0f %14.0f %14.0f %8.2f\n' "$m" "$tokens" "$c" "$r0" "$r1" \
      "$(awk -v a="$c" -v x="$r0" -v y="$r1" 'BEGIN {print a / (x < y ? x : y)}')"
  done
done
