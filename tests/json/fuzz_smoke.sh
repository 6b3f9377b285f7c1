#!/usr/bin/env bash
# Short libFuzzer run of clef's fuzz targets (fuzz/*_fuzzer.cpp: the JSON parser and renderer,
# and the request path json::parse -> parse_request -> encode_record), part of the tests;
# the long run is documented in fuzz/README.md.
#
# Usage: fuzz_smoke.sh <source dir> <work dir> [seconds per target, default 20]
# Compiles src/json/*.cpp and each target with clang++ -fsanitize=fuzzer,address,undefined (no
# CMake), then runs each target for the given time. Exit status: 0 when every target ran clean,
# 77 (ctest SKIP_RETURN_CODE) when clang++ or libFuzzer is missing, 1 on a finding or build error.
set -euo pipefail

src=${1:?usage: fuzz_smoke.sh <source dir> <work dir> [seconds]}
work=${2:?usage: fuzz_smoke.sh <source dir> <work dir> [seconds]}
seconds=${3:-20}

cxx=${CLEF_FUZZ_CXX:-}
if [[ -z "$cxx" ]]; then
  for c in clang++ clang++-14 clang++-15 clang++-16 clang++-17 clang++-18; do
    if command -v "$c" >/dev/null 2>&1; then cxx=$c; break; fi
  done
fi
if [[ -z "$cxx" ]]; then
  echo "SKIP: clang++ not found (libFuzzer needs clang); set CLEF_FUZZ_CXX to use another" >&2
  exit 77
fi

mkdir -p "$work"
flags=(-std=c++20 -g -O1 -Wall -Wextra -I"$src/src" -I"$src/tests" -fno-sanitize-recover=undefined)

# libFuzzer present? (clang without compiler-rt's fuzzer runtime fails to link this)
probe_src="$work/probe.cpp"
printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
  'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' >"$probe_src"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe_src" -o "$work/probe" 2>"$work/probe.log"; then
  echo "SKIP: $cxx cannot link -fsanitize=fuzzer,address,undefined (libFuzzer missing):" >&2
  cat "$work/probe.log" >&2
  exit 77
fi

echo "== compiling src/json, src/request and the record encoder with $cxx ($(${cxx} --version | head -1))"
objects=()
for f in "$src"/src/json/*.cpp "$src"/src/request/*.cpp "$src"/src/record/encode.cpp \
         "$src"/src/record/nfc.cpp; do
  o="$work/$(basename "$(dirname "$f")")_$(basename "${f%.cpp}").o"
  "$cxx" "${flags[@]}" -fsanitize=fuzzer-no-link,address,undefined -c "$f" -o "$o"
  objects+=("$o")
done

status=0
for target_src in "$src"/fuzz/*_fuzzer.cpp; do
  name=$(basename "${target_src%.cpp}")
  exe="$work/$name"
  echo "== building $name"
  "$cxx" "${flags[@]}" -fsanitize=fuzzer,address,undefined "$target_src" "${objects[@]}" \
    -lutf8proc -o "$exe"
  # A fresh corpus each run, seeded from fuzz/corpus/<target without _fuzzer> when present.
  corpus="$work/corpus_$name"
  rm -rf "$corpus"
  mkdir -p "$corpus"
  seeds="$src/fuzz/corpus/${name%_fuzzer}"
  [[ -d "$seeds" ]] && cp "$seeds"/* "$corpus"/
  args=(-max_total_time="$seconds" -error_exitcode=1 -timeout=10 -rss_limit_mb=2048
        -print_final_stats=1 -artifact_prefix="$work/$name-")
  [[ "$name" == json_parse* || "$name" == request* ]] && args+=(-dict="$src/fuzz/json.dict")
  echo "== running $name for ${seconds}s"
  if ! "$exe" "${args[@]}" "$corpus" >"$work/$name.log" 2>&1; then
    echo "FAIL: $name found a problem; reproducer in $work/$name-*; log $work/$name.log" >&2
    tail -40 "$work/$name.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|Done [0-9]+ runs" "$work/$name.log" | tail -2 || true
  fi
done
exit $status
