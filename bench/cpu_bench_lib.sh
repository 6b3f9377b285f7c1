# Shared by the CPU comparison scripts (bench/cpu_vs_llama.sh, bench/cpu_vs_ik_llama.sh): sourced
# after `root` is set, with the script's BUILD_DIR argument. The same settings, test model files
# and requests for clef and the peer it is measured against.

# The settings (environment: MODELS, SIZES, REPS, THREADS; see each script's head).
if [[ ! -x "${1:-$root/build}/clef" ]]; then
  echo "error: no clef in ${1:-$root/build} (the build directory): run ./scripts/setup first" >&2
  exit 2
fi
build=$(cd "${1:-$root/build}" && pwd)
models=${MODELS:-"shape-9b shape-0.8b:Q4_K_M"}
sizes=${SIZES:-"1024 4096"}
reps=${REPS:-2}
threads=${THREADS:-2}
clef="$build/clef"
# ISA: the instruction sets both sides are built for. native (default): -march=native, all this
# CPU has; avx2: AVX2 + FMA + F16C + BMI2 with AVX-512 off (Haswell to Zen 3); avx2-vnni: and
# AVX-VNNI (Alder Lake and later, Zen 5). For the last two ggml-cpu is built once more for that set
# ($build/isa-NAME/: isa_ggml_cpu) and loaded in place of the native one.
isa=${ISA:-native}
case "$isa" in
  native | avx2 | avx2-vnni) ;;
  *) echo "error: ISA must be native, avx2 or avx2-vnni, got '$isa'" >&2; exit 2 ;;
esac
clef_libs=""  # LD_LIBRARY_PATH of clef's runs (isa_ggml_cpu sets it)

# ggml-cpu of the llama.cpp tree SRC built for $isa into OUT (configured once, about a minute on 2
# cores; brought up to date with SRC every run): prints the directory of its libggml-cpu.so.0.
isa_ggml_cpu() {  # SRC OUT
  local src=$1 out=$2
  local flags=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
  [[ "$isa" == avx2-vnni ]] && flags+=(-DGGML_AVX_VNNI=ON)
  if [[ ! -f "$out/build.ninja" ]]; then
    echo "== configuring ggml-cpu of $src for $isa in $out" >&2
    mkdir -p "$out"
    cmake -S "$src" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
      -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF "${flags[@]}" > "$out/cmake.out" 2>&1 ||
      { echo "error: configuring $out failed: $out/cmake.out" >&2; exit 1; }
  fi
  cmake --build "$out" --target ggml-cpu > "$out/build.out" 2>&1 ||
    { echo "error: building ggml-cpu in $out failed: $out/build.out" >&2; exit 1; }
  echo "$out/bin"
}

# For ISA other than native, sets clef_libs: clef's patched tree's ggml-cpu for it, bound to
# clef's own libggml-base (whose soname is unversioned: the variant's NEEDED libggml-base.so.0
# becomes a link to the same file, which the loader maps once). Each script calls it after its own
# refusals.
clef_isa_libs() {
  if [[ "$isa" != native ]]; then
    clef_libs=$(isa_ggml_cpu "$root/third_party/llama.cpp" "$build/isa-$isa/clef")
    ln -sf "$build/bin/libggml-base.so" "$clef_libs/libggml-base.so.0"
  fi
}

# Runs a command with DIR (when not empty) first in LD_LIBRARY_PATH.
with_libs() {  # DIR COMMAND...
  local dir=$1
  shift
  if [[ -n "$dir" ]]; then
    LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"
  else
    "$@"
  fi
}

# The test model NAME[:QUANT] (`clef make-test-model --preset NAME --quant QUANT`), made once into
# $build/bench-models; prints its directory.
model_dir() {
  local preset=${1%%:*} quant=""
  [[ "$1" == *:* ]] && quant=${1#*:}
  local dir="$build/bench-models/$preset${quant:+-$quant}"
  if [[ ! -f "$dir/joint_head_config.json" ]]; then
    mkdir -p "$build/bench-models"
    "$clef" make-test-model "$dir" --preset "$preset" ${quant:+--quant "$quant"} >&2
  fi
  echo "$dir"
}

# A request of about TOKENS tokens into FILE: the card's three questions and a state of common
# words (the exact count is clef's usage.input_tokens, which the peer then prefills).
request_of() {
  python3 - "$1" "$2" "$root/examples/card.json" <<'EOF'
import json, random, sys
n, out, card = int(sys.argv[1]), sys.argv[2], json.load(open(sys.argv[3]))
random.seed(n)
words = ("the database server customer login error timeout network outage request cache disk "
         "memory latency region cluster deploy rollback incident alert page team billing").split()
card["state"] = " ".join(random.choice(words) for _ in range(max(1, n - 345)))
json.dump(card, open(out, "w"))
EOF
}

# The median of the numbers on stdin, one a line.
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# One clef decision of REQUEST on the model in DIR with THREADS threads: appends its milliseconds
# (the `timings` line of `clef ask --verbose`: parse, record, backbone, head, answers; the load
# excluded) to MS_FILE and prints the request's input tokens. CLEF_SET: an extra `--set`.
clef_decision() {  # DIR REQUEST THREADS MS_FILE
  local out err
  out=$(mktemp) err=$(mktemp)
  with_libs "$clef_libs" "$clef" ask --model-dir "$1" --request "$2" --threads "$3" --verbose \
    ${CLEF_SET:+--set "$CLEF_SET"} > "$out" 2> "$err"
  sed -n 's/^timings (ms):.*total \([0-9.]*\).*/\1/p' "$err" >> "$4"
  sed -n 's/.*"input_tokens":\([0-9]*\).*/\1/p' "$out"
  rm -f "$out" "$err"
}

# llama-bench's prefill of TOKENS tokens (-p N -n 0, -b 512 -ub 512, flash attention off as clef)
# of GGUF with THREADS threads and any extra flags: prints its milliseconds.
llama_bench_prefill_ms() {  # BENCH GGUF TOKENS THREADS [FLAGS...]
  local bench=$1 gguf=$2 tokens=$3 threads=$4
  shift 4
  "$bench" -m "$gguf" -p "$tokens" -n 0 -t "$threads" -b 512 -ub 512 -fa 0 -r 1 "$@" -o json 2>/dev/null |
    python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["avg_ns"] / 1e6)'
}
