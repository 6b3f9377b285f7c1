#!/usr/bin/env bash
# ggml's own op tests (test-backend-ops of the pinned tree, built against clef's libggml-base.so)
# on Vulkan0 against the CPU: proves the ABI of the prebuilt Vulkan module with clef's ggml-base,
# and that every op the backbone, the vision tower and the joint schema head run on the device
# gives the CPU's results within ggml's per-op tolerances.
#   backend_ops.sh TEST_BACKEND_OPS MODULE OPS
# Physical device 0 is the one tested (lavapipe on a machine without a GPU). Exits 77 (ctest: skipped)
# only when the machine has no Vulkan device at all.
set -uo pipefail
bin=$1 module=$2 ops=$3
log=$(mktemp)
trap 'rm -f "$log"' EXIT
GGML_BACKEND_PATH=$module GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0} \
  "$bin" test -b Vulkan0 -o "$ops" -j "$(nproc)" >"$log" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "Invalid Vulkan device index\|No devices found\|libvulkan.so.1" "$log"; then
  echo "no Vulkan device on this machine:"; tail -5 "$log"; exit 77
fi
# The summary and every failing case; passing cases are counted.
grep -E "FAIL|not supported|Backend|Testing|tests passed|backends passed|Device" "$log" | grep -v "^  .*OK$" | head -200
echo "$(grep -c ': OK' "$log") cases OK, $(grep -c 'FAIL' "$log") failing, exit $rc"
exit $rc
