#!/usr/bin/env bash
# Short libFuzzer run of clef's fuzz targets (fuzz/*_fuzzer.cpp: the JSON parser and renderer,
# the request path, image bytes, data URIs, the image processor, the head's safetensors and
# config, GGUF headers), part of the tests; the long run is documented in fuzz/README.md.
#
# Usage: fuzz_smoke.sh <source dir> <work dir> [seconds per target, default 20]
# Compiles each target with the sources it exercises (sources_of below) with clang++
# -fsanitize=fuzzer,address,undefined (no CMake), then runs each target for the given time. Exit status: 0 when every target ran clean,
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
flags=(-std=c++20 -g -O1 -Wall -Wextra -I"$src/src" -I"$src/tests" -fno-sanitize-recover=undefined
       -isystem "$src/third_party/llama.cpp/ggml/include" -isystem "$src/third_party/llama.cpp/include"
       -isystem "$src/third_party/llama.cpp/vendor/cpp-httplib" -DCPPHTTPLIB_LISTEN_BACKLOG=4096)

# libFuzzer present? (clang without compiler-rt's fuzzer runtime fails to link this)
probe_src="$work/probe.cpp"
printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
  'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' >"$probe_src"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe_src" -o "$work/probe" 2>"$work/probe.log"; then
  echo "SKIP: $cxx cannot link -fsanitize=fuzzer,address,undefined (libFuzzer missing):" >&2
  cat "$work/probe.log" >&2
  exit 77
fi

# The sources each target exercises are compiled with the fuzzer's coverage and the sanitizers.
json_sources=("$src"/src/json/*.cpp)
request_sources=("${json_sources[@]}" "$src"/src/request/*.cpp "$src"/src/record/encode.cpp
                 "$src"/src/record/nfc.cpp "$src"/src/util/edit_distance.cpp)
image_sources=("$src"/src/media/{decode,decode_png,decode_jpeg,decode_webp,exif,probe,data_uri,base64}.cpp)
processor_sources=("$src"/src/vision/{smart_resize,grid,resample,processor,patches}.cpp)
# The server over the vendored cpp-httplib (compiled without its OpenSSL support; the server's own
# TLS session and the API keys' SHA-256 use OpenSSL directly: -lssl -lcrypto).
# The server embeds web/ (cmake/embed_web.cmake writes the source the build generates).
cmake -DWEB_DIR="$src/web" -DOUT="$work/web_files.cpp" -P "$src/cmake/embed_web.cmake"
server_sources=("${json_sources[@]}" "$src"/src/request/*.cpp "$src"/src/server/*.cpp "$src"/src/transport/*.cpp
                "$src"/src/runtime/loop/{cancellation,decision_loop,decision_queue,prepared_request,scheduler}.cpp "$src/src/util/digest.cpp"
                "$src/src/util/edit_distance.cpp" "$src/src/util/byte_size.cpp" "$src/src/util/memory_budget.cpp"
                "$work/web_files.cpp"
                "$src/third_party/llama.cpp/vendor/cpp-httplib/httplib.cpp")
# Targets whose code instantiates Debian's RapidJSON 1.1.0 skip UBSan's pointer-overflow check:
# its internal::Stack adds to a null pointer on the first push of every parse (stack.h:117,
# "applying non-zero offset to null pointer"; fixed upstream after 1.1.0), which is not clef's.
no_pointer_overflow=(-fno-sanitize=pointer-overflow)
sources_of() {  # target name -> its sources and libraries (one line each: "sources" then "libs")
  case "$1" in
    json_*) echo "${json_sources[*]}"; echo "" ;;
    request_*) echo "${request_sources[*]}"; echo "-lutf8proc" ;;
    vision_image_* | vision_data_uri_*) echo "${image_sources[*]}"; echo "-lpng -ljpeg -lwebp -lz" ;;
    vision_processor_*) echo "${processor_sources[*]}"; echo "" ;;
    head_*) echo "$src/src/head/safetensors.cpp $src/src/head/head_config.cpp $src/src/util/file_reader.cpp $src/src/util/mapped_file.cpp"; echo "" ;;
    gguf_*) echo "$src/src/gguf/header_scan.cpp"; echo "" ;;
    server_*) echo "${server_sources[*]}"; echo "-lssl -lcrypto -lpthread" ;;
    *) echo "no source list for fuzz target $1" >&2; return 1 ;;
  esac
}
extra_flags_of() {  # target name -> extra compiler flags
  case "$1" in
    head_*) echo "${no_pointer_overflow[*]}" ;;
    server_*) echo "-w" ;;  # cpp-httplib's own warnings are not clef's
    *) echo "" ;;
  esac
}
object_of() {  # compiles one source once into $work with extra flags $2; prints the object's path
  local f=$1 extra=$2 o
  o="$work/$(basename "$(dirname "$f")")_$(basename "${f%.cpp}").o"
  # Rebuilt when the source or any of clef's headers is newer (a stale object links against a
  # function a header has since moved).
  if [[ ! -f "$o" || "$f" -nt "$o" ||
        -n "$(find "$src/src" "$src/tests/support" -name '*.hpp' -newer "$o" -print -quit)" ]]; then
    # shellcheck disable=SC2086 # the flag list is words
    "$cxx" "${flags[@]}" -fsanitize=fuzzer-no-link,address,undefined $extra -c "$f" -o "$o" >&2
  fi
  echo "$o"
}

status=0
for target_src in "$src"/fuzz/*_fuzzer.cpp; do
  name=$(basename "${target_src%.cpp}")
  exe="$work/$name"
  echo "== building $name"
  { read -r target_sources; read -r target_libs; } < <(sources_of "$name")
  extra=$(extra_flags_of "$name")
  objects=()
  for f in $target_sources; do objects+=("$(object_of "$f" "$extra")"); done
  # shellcheck disable=SC2086 # the library and flag lists are words
  "$cxx" "${flags[@]}" -fsanitize=fuzzer,address,undefined $extra "$target_src" "${objects[@]}" \
    $target_libs -o "$exe"
  # A fresh corpus each run, seeded from fuzz/corpus/<target without _fuzzer> when present.
  corpus="$work/corpus_$name"
  rm -rf "$corpus"
  mkdir -p "$corpus"
  seeds="$src/fuzz/corpus/${name%_fuzzer}"
  [[ -d "$seeds" ]] && cp "$seeds"/* "$corpus"/
  # Real files from the tests' data as seeds too.
  case "$name" in
    vision_image_*) cp "$src"/tests/data/vision/decode/*.{png,jpg,webp} "$corpus"/ 2>/dev/null || true ;;
    head_*) cp "$src"/tests/data/oracle/head/tiny/* "$corpus"/ 2>/dev/null || true ;;
  esac
  args=(-max_total_time="$seconds" -error_exitcode=1 -timeout=10 -rss_limit_mb=2048
        -print_final_stats=1 -artifact_prefix="$work/$name-")
  [[ "$name" == json_parse* || "$name" == request* ]] && args+=(-dict="$src/fuzz/json.dict")
  [[ "$name" == server_http* ]] && args+=(-dict="$src/fuzz/http.dict")
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
