#!/usr/bin/env bash
# RSS of `clef serve --demo` before and after a burst of large-image requests (issue 13: the
# process should give the memory of a large request back). Loopback only; bounded (6 requests).
# usage: bench/image_rss.sh [CLEF_BINARY] [SIDE]   (default build/clef, a SIDE x SIDE = 2048 PNG)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
clef="${1:-$here/../build/clef}"
side="${2:-2048}"
work="$(mktemp -d)"
python3 - "$side" "$here/../examples/card.json" "$work/big.json" <<'PY'
import base64, json, struct, sys, zlib
side, card, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
png = (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', side, side, 8, 0, 0, 0, 0))
       + chunk(b'IDAT', zlib.compress(b'\x00' * ((side + 1) * side), 9)) + chunk(b'IEND', b''))
request = json.load(open(card))
request['images'] = ['data:image/png;base64,' + base64.b64encode(png).decode()]
json.dump(request, open(out, 'w'))
PY
"$clef" serve --demo --host 127.0.0.1 --port 0 >"$work/out" 2>"$work/err" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 600); do
  port=$(sed -n 's|.*127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/out" | head -1); [ -n "$port" ] && break; sleep 0.1
done
for _ in $(seq 600); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "localhost:$port/health")" = 200 ] && break; sleep 0.1
done
rss() { awk '/^VmRSS:/ {r=$2} /^RssAnon:/ {a=$2} END {print r " KiB (anonymous " a " KiB)"}' "/proc/$pid/status"; }
echo "idle: $(rss)"
curl -s -o /dev/null "localhost:$port/v1/decisions" -H 'Content-Type: application/json' \
  -d @"$here/../examples/card.json"
echo "after a text request: $(rss)"
for i in 1 2 3 4 5 6; do
  curl -s -o /dev/null -w "${side}x${side} image request $i: %{http_code} in %{time_total} s, " \
    "localhost:$port/v1/decisions" -H 'Content-Type: application/json' --data-binary @"$work/big.json"
  sleep 1
  echo "1 s later $(rss)"
done
