#!/usr/bin/env bash
# An installed clef is relocatable (issue 45): `cmake --install BUILD --prefix P`, the prefix moved
# elsewhere, and the build and source trees hidden (empty directories bind-mounted over them in a
# private mount namespace): `clef make-test-model`, `info` (the Vulkan module found under lib/clef
# when the build has it), `ask` and `verify --limit 2` (its default fixture from share/clef) all
# work, and nothing names the build tree (RUNPATH, the fixture default in --help). Given a clip
# writer (a CLEF_VIDEO build), `ask --video` decodes a video file with the installed FFmpeg module
# (lib/clef/libclef_video_ffmpeg.so; issue 53: it was not installed, and the 415 named the build
# tree).
# usage: installed_clef.sh BUILD_DIR SOURCE_DIR [CLIP_WRITER]   (77: no mount namespace)
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
clip_writer=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unshare --mount true 2>/dev/null || { echo "SKIP: no private mount namespace here (unshare --mount needs root)"; exit 77; }

cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
mv "$work/prefix" "$work/moved"   # relocated after the install
clef="$work/moved/bin/clef"
runpath=$(readelf -d "$clef" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
[ "$runpath" = '$ORIGIN/../lib' ] || { echo "FAIL: RUNPATH of the installed clef is '$runpath'"; exit 1; }
cp "$src/examples/card.json" "$work/card.json"
mkdir -p "$work/empty"
video_check=""
if [ -n "$clip_writer" ]; then
  "$clip_writer" "$work/clip.mp4"
  [ -f "$work/moved/lib/clef/libclef_video_ffmpeg.so" ] ||
    { echo "FAIL: the video module was not installed into lib/clef/"; ls "$work/moved/lib" "$work/moved/lib/clef"; exit 1; }
  video_check="\"$clef\" ask --model-dir \"$work/m\" --request \"$work/card.json\" --video \"$work/clip.mp4\" --threads 1 > \"$work/ask-video.json\" 2> \"$work/ask-video.log\""
fi

cat > "$work/run.sh" <<INNER
set -euo pipefail
mount --bind "$work/empty" "$build"
mount --bind "$work/empty" "$src"
export XDG_CACHE_HOME="$work/cache" HOME="$work"
unset CLEF_GGML_BACKENDS_DIR CLEF_VOCAB_GGUF
cd "$work"
"$clef" make-test-model "$work/m" > "$work/make.log" 2>&1
"$clef" info "$work/m" > "$work/info.log" 2>&1
"$clef" ask --model-dir "$work/m" --request "$work/card.json" --threads 1 > "$work/ask.json" 2> "$work/ask.log"
$video_check
set +e
"$clef" verify --model-dir "$work/m" --limit 2 --threads 1 > "$work/verify.log" 2>&1
echo \$? > "$work/verify.rc"
"$clef" verify --help > "$work/verify-help.log" 2>&1
INNER
unshare --mount bash "$work/run.sh" || { echo "FAIL: a command of the installed clef failed"; tail -5 "$work"/*.log; exit 1; }

grep -q '"answers"' "$work/ask.json" || { echo "FAIL: clef ask gave no decision"; cat "$work/ask.json" "$work/ask.log"; exit 1; }
grep -q "qwen35" "$work/info.log" || { echo "FAIL: clef info"; cat "$work/info.log"; exit 1; }
if [ -n "$clip_writer" ]; then
  grep -q '"answers"' "$work/ask-video.json" ||
    { echo "FAIL: the installed clef decided no video"; cat "$work/ask-video.json" "$work/ask-video.log"; exit 1; }
fi
if [ -f "$build/ggml-backends/libggml-vulkan.so" ] && grep -q "loaded Vulkan backend" "$work/info.log"; then
  grep -q "from $work/moved/lib/clef/ggml-backends/libggml-vulkan.so" "$work/info.log" ||
    { echo "FAIL: the Vulkan module was not the installed one"; grep "Vulkan" "$work/info.log"; exit 1; }
fi
# verify: a test model against the authors' fixture decides the runs and fails the bar (exit 1)
rc=$(cat "$work/verify.rc")
[ "$rc" = 0 ] || [ "$rc" = 1 ] || { echo "FAIL: clef verify exit $rc"; cat "$work/verify.log"; exit 1; }
grep -q "fixture: $work/moved/share/clef/oracle/coreai/fixture.json" "$work/verify.log" ||
  { echo "FAIL: verify did not read the installed fixture"; head -5 "$work/verify.log"; exit 1; }
grep -q "left out by --limit" "$work/verify.log" || { echo "FAIL: verify does not say what --limit left out"; cat "$work/verify.log"; exit 1; }
if grep -q -e "$build" -e "$src" "$work/verify-help.log"; then
  echo "FAIL: clef verify --help names the build or source tree"; grep -e "$build" -e "$src" "$work/verify-help.log"; exit 1
fi
echo "PASS: installed into a prefix, moved, run with the build and source trees hidden"
