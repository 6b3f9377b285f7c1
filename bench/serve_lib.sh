# Shared by the bench/ scripts (source it): start a `clef serve` on a free loopback port, wait
# until it is healthy, stop it with SIGTERM.
#   start_clef CLEF WORKDIR NAME [serve args...]   sets CLEF_PID and CLEF_PORT; logs in WORKDIR/NAME.*
#   stop_clef PID                                  SIGTERM, waits up to 30 s; returns its exit status
#   rss_kib PID                                    the process's resident set, KiB

health_of() {  # PORT -> the status code of GET /health (000 when nothing answers)
  local code
  exec 3<>"/dev/tcp/127.0.0.1/$1" 2>/dev/null || { echo 000; return; }
  printf 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
  code="$(head -1 <&3 | cut -d' ' -f2)"
  exec 3<&-
  echo "${code:-000}"
}

start_clef() {
  local clef="$1" work="$2" name="$3"
  shift 3
  # The access log costs a write per request; keep it in a file, not the terminal.
  "$clef" serve --host 127.0.0.1 --port 0 "$@" >"$work/$name.stdout" 2>"$work/$name.log" &
  CLEF_PID=$!
  CLEF_PORT=""
  for _ in $(seq 1200); do  # generating the demo model on first use can take a while
    CLEF_PORT="$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/$name.stdout" | head -1)"
    [[ -n "$CLEF_PORT" ]] && break
    kill -0 "$CLEF_PID" 2>/dev/null || { cat "$work/$name.log" >&2; return 1; }
    sleep 0.1
  done
  [[ -n "$CLEF_PORT" ]] || { echo "the server printed no port" >&2; return 1; }
  for _ in $(seq 1200); do
    [[ "$(health_of "$CLEF_PORT")" == "200" ]] && return 0
    kill -0 "$CLEF_PID" 2>/dev/null || { cat "$work/$name.log" >&2; return 1; }
    sleep 0.1
  done
  echo "the server never became healthy" >&2
  return 1
}

stop_clef() {
  local pid="$1"
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "the server did not exit within 30 s of SIGTERM" >&2
    kill -KILL "$pid" 2>/dev/null
    return 1
  fi
  wait "$pid"
}

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
