#!/usr/bin/env bash
# docs/scale-out.md's one-machine recipe, run as written: the shell block under "a recipe that runs
# as written", with its ports (8080-8082, 9081-9082) moved to free ones, /tmp/clef-fleet to a
# temporary directory and ./build/clef to BUILD_DIR's clef. It must print a decision answered
# through HAProxy by a replica that checks API keys, and stop everything it started.
# usage: scale_out_recipe.sh BUILD_DIR SOURCE_DIR   (77 when haproxy is not installed)
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
command -v haproxy >/dev/null 2>&1 || { echo "SKIP: haproxy is not installed (scripts/setup installs it)"; exit 77; }
work=$(mktemp -d)
trap 'kill $(cat "$work/fleet/haproxy.pid" "$work/fleet/pids" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
export XDG_CACHE_HOME="$work/cache"

block=$(awk '/a recipe that runs as written/ {f=1} f && /^```sh$/ {inb=1; next} inb && /^```$/ {exit} inb' \
  "$src/docs/scale-out.md")
[ -n "$block" ] || { echo "FAIL: no recipe block in docs/scale-out.md"; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
front=$(free_port); p1=$(free_port); p2=$(free_port); a1=$(free_port); a2=$(free_port)
# The block names replica i's ports 808$i and 908$i: arrays P and A hold the free ones.
script="P=(_ $p1 $p2); A=(_ $a1 $a2)"$'\n'$block
script=${script//808\$i/\$\{P[\$i]\}}
script=${script//908\$i/\$\{A[\$i]\}}
script=${script//127.0.0.1:8081:9081/127.0.0.1:$p1:$a1}
script=${script//127.0.0.1:8082:9082/127.0.0.1:$p2:$a2}
script=${script//8080/$front}
script=${script//\/tmp\/clef-fleet/$work\/fleet}
script=${script//.\/build\/clef/$build\/clef}
if grep -qE '808\$i|908\$i|:80(8[0-2])\b' <<<"$script"; then
  echo "FAIL: the recipe names ports this test does not move:"; echo "$script"; exit 1
fi
echo "$script" > "$work/recipe.sh"
cd "$src"
out=$(timeout 300 bash "$work/recipe.sh" 2>&1) || { echo "FAIL: the recipe failed:"; echo "$out"; cat "$work"/fleet/*.log 2>/dev/null | tail -20; exit 1; }
grep -q '"answers"' <<<"$out" || { echo "FAIL: no decision in the recipe's output:"; echo "$out"; exit 1; }
grep -q 'key=client' "$work"/fleet/replica*.log || { echo "FAIL: no replica logged the key:"; cat "$work"/fleet/replica*.log | tail; exit 1; }
sleep 1
for pid in $(cat "$work/fleet/pids"); do
  if kill -0 "$pid" 2>/dev/null; then sleep 5; fi
  if kill -0 "$pid" 2>/dev/null; then echo "FAIL: replica $pid still runs after the recipe's kill"; exit 1; fi
done
echo "PASS: the recipe answered through HAProxy: $(head -c 120 <<<"$out")"
