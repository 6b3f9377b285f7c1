#!/usr/bin/env bash
# ggml's own op tests (test-backend-ops of the pinned tree, built against clef's libggml-base.so)
# on Vulkan0 against the CPU: proves the ABI of the prebuilt Vulkan module with clef's ggml-base,
# and that every op the backbone, the vision tower and the joint schema head run on the device
# gives the CPU's results within ggml's per-op tolerances.
#   backend_ops.sh TEST_BACKEND_OPS MODULE
# Physical device 0 is the one tested (lavapipe on a machine without a GPU). Exits 77 (ctest: skipped)
# only when the machine has no Vulkan device at all.
#
# The ops (read from src/models/qwen35.cpp + delta-net-base.cpp + llama-graph.cpp,
# tools/mtmd/models/qwen3vl.cpp + clip-graph.cpp, src/head/*.cpp), each in one process:
#  - every case of the element-wise, norm and softmax ops;
#  - SET_ROWS and CPY into the types clef's graphs write (the KV cache is f16, the recurrent state
#    and activations f32; clef has no cache-type option): the quantized destinations are not clef's,
#    and test-backend-ops draws its data from std::random_device, so a quantizer's rounding can miss
#    ggml's tolerance by chance (a CI run: SET_ROWS type_dst=q2_0 ERR 7.5e-5 > 3.9e-6, passing on
#    three reruns);
#  - GET_ROWS for the types clef's models hold (f32, f16, q8_0, q4_K, q6_K; i32), ROPE in the
#    modes they use (40: the backbone's interleaved M-RoPE, 24: the tower's vision RoPE);
#  - MUL_MAT (weights f32, f16, q8_0, q4_K, q6_K) and GATED_DELTA_NET (per-head gate, kda=0) one
#    case per process: in one process Mesa 22.3's lavapipe aborts them with heap corruption, since
#    test-backend-ops frees each case's buffers while the backend's descriptor sets still name them
#    (the lavapipe bug in docs/performance.md, "The device path on Vulkan"), not a wrong result.
set -uo pipefail
bin=$1 module=$2
export GGML_BACKEND_PATH=$module GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0}
jobs=$(nproc)
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
plain() { sed 's/\x1b\[[0-9;]*m//g' "$@"; }

# The cases the device supports, as "OP(params)" lines (support mode builds no graph).
"$bin" support -b Vulkan0 -o MUL_MAT,GATED_DELTA_NET >"$log/support" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "Invalid Vulkan device index\|No devices found\|libvulkan.so.1" "$log/support"; then
  echo "no Vulkan device on this machine:"; tail -5 "$log/support"; exit 77
fi

failed=0
run_op() {  # OP [PARAMS_REGEX]
  local op=$1 filter=${2:-}
  if [ -n "$filter" ]; then
    "$bin" test -b Vulkan0 -o "$op" -p "$filter" -j "$jobs" >"$log/$op" 2>&1
  else
    "$bin" test -b Vulkan0 -o "$op" -j "$jobs" >"$log/$op" 2>&1
  fi
  local code=$?
  local summary
  summary=$(plain "$log/$op" | grep -E "^ +[0-9]+/[0-9]+ tests passed" | tr -s ' ')
  if [ $code -ne 0 ] || [ -z "$summary" ]; then
    echo "$op: FAILED (exit $code)"
    plain "$log/$op" | grep -E "FAIL|Abort|corrupt" | head -20
    failed=1
  else
    echo "$op:$summary"
  fi
}

for op in CONT CONCAT REPEAT PAD ADD SUB MUL DIV SCALE SQR SQRT CLAMP SUM_ROWS CUMSUM \
          TRI SOLVE_TRI NORM RMS_NORM L2_NORM SOFT_MAX SWIGLU SILU SIGMOID EXP NEG SOFTPLUS GELU \
          GELU_ERF IM2COL SSM_CONV; do
  run_op "$op"
done
run_op SET_ROWS '^type_src=f32,type_dst=(f32|f16),'
run_op CPY '^type_src=(f32|f16|bf16|i32),type_dst=(f32|f16|bf16|i32),'
run_op GET_ROWS '^type=(f32|f16|i32|q8_0|q4_K|q6_K),'
run_op ROPE 'mode=(24|40),'

# One process per case.
plain "$log/support" | grep -E "^  (MUL_MAT|GATED_DELTA_NET)\(.*: SUPPORTED" | sed 's/^  //; s/: SUPPORTED.*//' |
  grep -E "^GATED_DELTA_NET\(.*kda=0|^MUL_MAT\(type_a=(f32|f16|q8_0|q4_K|q6_K),type_b=f32," |
  sort -u >"$log/cases"
n_cases=$(wc -l <"$log/cases")
xargs -d '\n' -P "$jobs" -I{} sh -c \
  '"$1" test -b Vulkan0 -o "$2" >/dev/null 2>&1 && echo ok || echo "FAILED (exit $?): $2"' \
  _ "$bin" {} <"$log/cases" >"$log/percase"
n_ok=$(grep -c '^ok$' "$log/percase")
echo "MUL_MAT and GATED_DELTA_NET: $n_ok/$n_cases cases passed, one process each"
if [ "$n_ok" -ne "$n_cases" ] || [ "$n_cases" -eq 0 ]; then
  grep -v '^ok$' "$log/percase" | head -20
  failed=1
fi
exit $failed
