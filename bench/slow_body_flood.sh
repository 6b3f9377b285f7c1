#!/usr/bin/env bash
# A slow-body flood against `clef serve --demo` (issue 52, item 3): FLOOD connections (default
# 120) each declare "Content-Length: 1000" and send one byte a second; meanwhile one decision
# every 0.25 s for DURATION seconds (default 20). Prints what the decisions got (statuses, median
# and worst latency) and what the flood's connections got. Run it alone.
#   bash bench/slow_body_flood.sh [CLEF_BINARY] [extra serve args...]
set -euo pipefail
clef=${1:-build/clef}
shift || true
cd "$(dirname "$0")/.."
source bench/serve_lib.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start_clef "$clef" "$work" serve --demo "$@"
echo "== $(date -u '+%F %T') $clef ($("$clef" --version 2>/dev/null | head -1 || echo '?')), $(nproc) CPUs"
python3 - "$CLEF_PORT" "${FLOOD:-120}" "${DURATION:-20}" <<'PY'
import json, socket, statistics, sys, threading, time, urllib.request, urllib.error
port, flood, duration = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
card = open("examples/card.json", "rb").read()
stop = time.monotonic() + duration
answers = []
def slow(i):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: 1000\r\n\r\n{")
    s.settimeout(0.01)
    got = b""
    while time.monotonic() < stop + 35:
        try:
            s.sendall(b" ")
        except OSError:
            break
        t = time.monotonic() + 1
        while time.monotonic() < t:
            try:
                chunk = s.recv(4096)
                if not chunk:
                    t = 0
                    break
                got += chunk
            except socket.timeout:
                pass
        if t == 0:
            break
    answers.append(got.split(b" ", 2)[1].decode() if got.startswith(b"HTTP/") else "none")
    s.close()
threads = [threading.Thread(target=slow, args=(i,), daemon=True) for i in range(flood)]
for t in threads:
    t.start()
time.sleep(2)
results = []
while time.monotonic() < stop:
    t0 = time.monotonic()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/decisions", data=card,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            status = r.status
    except urllib.error.HTTPError as e:
        status = e.code
    except Exception:
        status = "error"
    results.append((status, time.monotonic() - t0))
    time.sleep(0.25)
statuses = {}
for s, _ in results:
    statuses[s] = statuses.get(s, 0) + 1
lat = sorted(t for s, t in results if s == 200)
print(f"decisions during the flood of {flood} slow bodies: {len(results)} sent, statuses {statuses}"
      + (f", 200s in median {statistics.median(lat) * 1000:.0f} ms, worst {lat[-1] * 1000:.0f} ms"
         if lat else ""))
for t in threads:
    t.join(timeout=40)
flooded = {}
for a in answers:
    flooded[a] = flooded.get(a, 0) + 1
print(f"the flood's connections got: {flooded}")
PY
stop_clef "$CLEF_PID" > /dev/null || true
