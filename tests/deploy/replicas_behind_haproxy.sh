#!/usr/bin/env bash
# Scale-out on a real balancer (issue 17), loopback only: three `clef serve --demo` replicas behind
# Debian's HAProxy with the config deploy/haproxy/make-config writes.
#  1. `clef batch` sends 500 mixed lines (text and JSON states, refused requests, unreadable lines)
#     through HAProxy; one replica is SIGKILLed and another SIGTERMed in the middle. Every line gets
#     exactly one record, each equal to what a single server answers, and HAProxy's log shows the
#     fail-over.
#  2. State-keyed routing: 50 question sets over 5 states through HAProxy on fresh replicas: every
#     state is served by one replica (its cache answers the other 9 question sets: 45 state hits).
#  3. `clef batch --resume` after `clef batch` itself is killed: no line decided twice, none missing.
#  4. API keys: replicas with --api-key-file behind HAProxy with --api-key-env: `clef batch`
#     through HAProxy answers without a key; a replica asked directly wants its key (401), and
#     `clef batch --api-key` to it answers the same bytes.
# usage: replicas_behind_haproxy.sh BUILD_DIR SOURCE_DIR   (77 when haproxy is not installed)
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
clef="$build/clef"
command -v haproxy >/dev/null 2>&1 || { echo "SKIP: haproxy is not installed (scripts/setup installs it)"; exit 77; }
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
export XDG_CACHE_HOME="$work/cache"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_server NAME ARGS...: `clef serve --demo` on free ports; sets ${NAME}_pid, _port, _agent.
start_server() {
  local name=$1; shift
  "$clef" serve --demo --host 127.0.0.1 --port 0 --agent-port 0 --threads 1 "$@" \
    >"$work/$name.out" 2>"$work/$name.log" &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 600); do
    grep -q "agent check on" "$work/$name.out" 2>/dev/null && break
    sleep 0.05
  done
  local port agent
  port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/$name.out")
  agent=$(sed -n 's|.*agent check on 127\.0\.0\.1:\([0-9]*\).*|\1|p' "$work/$name.out")
  for _ in $(seq 600); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$port/health")" = 200 ] && break
    sleep 0.1
  done
  printf -v "${name}_pid" '%s' "$pid"
  printf -v "${name}_port" '%s' "$port"
  printf -v "${name}_agent" '%s' "$agent"
}

# start_haproxy NAME REPLICA...: HAProxy in the foreground on a free port; sets ${NAME}_port.
# make-config also gets the arguments in the array haproxy_extra.
haproxy_extra=()
start_haproxy() {
  local name=$1; shift
  local port stats args=()
  port=$(free_port)
  stats=$(free_port)
  for r in "$@"; do args+=(--replica "127.0.0.1:$(eval echo "\$${r}_port"):$(eval echo "\$${r}_agent")"); done
  "$src/deploy/haproxy/make-config" --listen "127.0.0.1:$port" --stats "127.0.0.1:$stats" \
    ${haproxy_extra[@]+"${haproxy_extra[@]}"} "${args[@]}" \
    >"$work/$name.cfg"
  haproxy -db -f "$work/$name.cfg" >"$work/$name.log" 2>&1 &
  pids+=("$!")
  for _ in $(seq 300); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$port/health")" = 200 ] && break
    sleep 0.1
  done
  sleep 1.5  # every replica's first health and agent checks
  printf -v "${name}_port" '%s' "$port"
}

lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }

# The input: 500 lines over 25 states, with refused requests and unreadable lines among them.
python3 - "$work/in.jsonl" <<'PY'
import json, sys
out = open(sys.argv[1], "w")
questions = [
    {"outage": {"type": "noul", "instructions": "Is a service outage reported?"}},
    {"team": {"type": "choice", "criteria": {"eng": "Engineering", "bill": "Billing", "sales": "Sales"}}},
    {"urgency": {"type": "score", "criteria": ["low", "medium", "high", "critical"]}},
    {"refund": {"type": "noul"}, "tone": {"type": "choice", "criteria": {"calm": "Calm", "angry": "Angry"}}},
]
for i in range(500):
    if i % 50 == 7:
        out.write("{not json\n"); continue
    if i % 50 == 19:
        out.write(json.dumps({"id": f"bad-{i}", "request": {"state": "x", "questions": {"q": {"type": "maybe"}}}}) + "\n"); continue
    s = i % 25
    state = f"Ticket {s}: " + " ".join(["the database", "is down", "customers wait", "refund asked"][: 1 + s % 4]) * (1 + s % 3)
    if s % 5 == 0:
        state = {"ticket": s, "text": state, "tags": ["t%d" % (s % 3)]}
    out.write(json.dumps({"id": f"req-{i}", "request": {"state": state, "questions": questions[i % 4]}}) + "\n")
PY

echo "== the reference: one server, no cache"
start_server single --state-cache-mb 0
"$clef" batch "$work/in.jsonl" "$work/reference.jsonl" --endpoint "http://127.0.0.1:$single_port" \
  --concurrency 2 >"$work/reference.summary" || [ $? -eq 3 ]  # 3: lines refused, as meant
kill -TERM "$single_pid"

echo "== 1. 500 lines through HAProxy, one replica killed, one stopped"
start_server r1 --busy-status 503
start_server r2 --busy-status 503
start_server r3 --busy-status 503
start_haproxy lb r1 r2 r3
"$clef" batch "$work/in.jsonl" "$work/out.jsonl" --endpoint "http://127.0.0.1:$lb_port" \
  --concurrency 8 >"$work/batch.summary" 2>"$work/batch.err" &
batch_pid=$!
for _ in $(seq 600); do [ "$(lines "$work/out.jsonl")" -ge 150 ] && break; sleep 0.02; done
kill -KILL "$r1_pid"
echo "   killed replica 1 after $(lines "$work/out.jsonl") lines"
for _ in $(seq 600); do [ "$(lines "$work/out.jsonl")" -ge 300 ] && break; sleep 0.02; done
kill -TERM "$r2_pid"
echo "   stopped replica 2 after $(lines "$work/out.jsonl") lines"
wait "$batch_pid" || [ $? -eq 3 ]
cat "$work/batch.summary"
python3 - "$work/in.jsonl" "$work/reference.jsonl" "$work/out.jsonl" <<'PY'
import json, sys
n = sum(1 for _ in open(sys.argv[1]))
def records(path):
    by_line = {}
    for raw in open(path):
        r = json.loads(raw)
        assert r["line"] not in by_line, f"{path}: line {r['line']} answered twice"
        by_line[r["line"]] = r
    return by_line
ref, out = records(sys.argv[2]), records(sys.argv[3])
assert sorted(out) == list(range(1, n + 1)), f"lines missing: {sorted(set(range(1, n + 1)) - set(out))[:10]}"
assert sorted(ref) == list(range(1, n + 1))
for line in range(1, n + 1):
    a, b = ref[line], out[line]
    assert a["status"] == b["status"], f"line {line}: status {b['status']} through HAProxy, {a['status']} alone: {b}"
    if a["status"] == 200:
        assert a["response"] == b["response"], f"line {line}: answers differ"
    else:
        assert a["error"]["code"] == b["error"]["code"], f"line {line}: {b['error']} vs {a['error']}"
ok = sum(1 for r in out.values() if r["status"] == 200)
print(f"   every one of {n} lines answered exactly once, equal to the single server ({ok} answers, {n - ok} refusals)")
PY
grep -Eq "clef1 is DOWN|clef1.*(DOWN|down)" "$work/lb.log" || { echo "FAIL: HAProxy never marked the killed replica down"; cat "$work/lb.log"; exit 1; }
echo "   HAProxy: $(grep -cE 'is DOWN' "$work/lb.log") replica-down events, $(grep -cE 'is going down|MAINT|DRAIN|drain' "$work/lb.log") drain/maint events"
kill -TERM "$r3_pid"

echo "== 2. state-keyed routing: 50 question sets over 5 states"
start_server s1
start_server s2
start_server s3
start_haproxy keyed s1 s2 s3
python3 - "$work/keyed.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as out:
    for i in range(50):
        s = i % 5
        state = f"State {s}: " + "the printer on floor %d jams and the queue grows " % s * 6
        q = {f"q{i}": {"type": "choice", "criteria": {"a": f"Option A{i}", "b": f"Option B{i}"}}}
        out.write(json.dumps({"state": state, "questions": q}) + "\n")
PY
"$clef" batch "$work/keyed.jsonl" "$work/keyed.out" --endpoint "http://127.0.0.1:$keyed_port" \
  --concurrency 1 >/dev/null
hits=0
for r in s1 s2 s3; do
  port=$(eval echo "\$${r}_port")
  m=$(curl -s "127.0.0.1:$port/metrics")
  h=$(sed -n 's/^clef_state_cache_hits_total //p' <<<"$m")
  p=$(sed -n 's/^clef_state_cache_prefix_hits_total //p' <<<"$m")
  echo "   replica $r: $h cache hits, $p of them only the system prefix"
  hits=$((hits + h - p))
done
[ "$hits" -eq 45 ] || { echo "FAIL: $hits state hits; 45 when each state stays on one replica"; exit 1; }
echo "   45 state hits: every state was served by one replica"

echo "== 3. clef batch killed, then --resume"
"$clef" batch "$work/in.jsonl" "$work/resumed.jsonl" --endpoint "http://127.0.0.1:$keyed_port" \
  --concurrency 4 >/dev/null 2>&1 &
batch_pid=$!
for _ in $(seq 600); do [ "$(lines "$work/resumed.jsonl")" -ge 120 ] && break; sleep 0.01; done
kill -KILL "$batch_pid"
wait "$batch_pid" 2>/dev/null || true
before=$(lines "$work/resumed.jsonl")
"$clef" batch "$work/in.jsonl" "$work/resumed.jsonl" --endpoint "http://127.0.0.1:$keyed_port" \
  --concurrency 4 --resume >"$work/resume.summary" || [ $? -eq 3 ]
python3 - "$work/in.jsonl" "$work/resumed.jsonl" "$work/reference.jsonl" <<'PY'
import json, sys
n = sum(1 for _ in open(sys.argv[1]))
seen = {}
for raw in open(sys.argv[2]):
    r = json.loads(raw)
    assert r["line"] not in seen, f"line {r['line']} decided twice"
    seen[r["line"]] = r
assert sorted(seen) == list(range(1, n + 1)), "lines missing after --resume"
ref = {json.loads(raw)["line"]: json.loads(raw) for raw in open(sys.argv[3])}
for line, r in seen.items():
    assert r["status"] == ref[line]["status"] and r.get("response") == ref[line].get("response"), f"line {line} differs"
print(f"   {n} lines, each once, equal to the reference")
PY
echo "   killed after $before records; $(head -1 "$work/resume.summary")"
echo "== 4. API keys: replicas that want one, HAProxy that sends it"
printf '# the balancer\nbalancer sk-balancer-secret\nops sk-ops-secret\n' >"$work/keys"
start_server k1 --api-key-file "$work/keys"
start_server k2 --api-key-file "$work/keys"
export CLEF_REPLICA_KEY=sk-balancer-secret
haproxy_extra=(--api-key-env CLEF_REPLICA_KEY)
start_haproxy lbk k1 k2
head -40 "$work/in.jsonl" >"$work/in40.jsonl"
"$clef" batch "$work/in40.jsonl" "$work/via-lb.jsonl" --endpoint "http://127.0.0.1:$lbk_port" \
  --concurrency 2 --ordered >/dev/null || [ $? -eq 3 ]
direct=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
  -d '{"state":"x","questions":{"q":{"type":"noul"}}}' "127.0.0.1:$k1_port/v1/decisions")
[ "$direct" = 401 ] || { echo "FAIL: a replica without a key answered $direct, not 401"; exit 1; }
"$clef" batch "$work/in40.jsonl" "$work/direct.jsonl" --endpoint "http://127.0.0.1:$k1_port" \
  --api-key sk-ops-secret --concurrency 2 --ordered >/dev/null || [ $? -eq 3 ]
python3 - "$work/via-lb.jsonl" "$work/direct.jsonl" "$work/reference.jsonl" <<'PY'
import json, sys
lb = [json.loads(l) for l in open(sys.argv[1])]
direct = [json.loads(l) for l in open(sys.argv[2])]
ref = {json.loads(l)["line"]: json.loads(l) for l in open(sys.argv[3])}
assert len(lb) == len(direct) == 40, (len(lb), len(direct))
for a, b in zip(lb, direct):
    r = ref[a["line"]]
    assert a["status"] == b["status"] == r["status"], (a["line"], a["status"], b["status"], r["status"])
    assert a.get("response") == b.get("response") == r.get("response"), f"line {a['line']} differs"
assert sum(1 for a in lb if a["status"] == 200) >= 30
print("   40 lines through HAProxy (its key) and direct (--api-key): equal to the reference")
PY
grep -q "key=balancer" "$work/k1.log" "$work/k2.log" || { echo "FAIL: no replica logged key=balancer"; exit 1; }
if grep -q "sk-balancer-secret\|sk-ops-secret" "$work/k1.log" "$work/k2.log" "$work/lbk.cfg"; then
  echo "FAIL: a key's text is in a log or the HAProxy config"; exit 1
fi
echo "   a replica asked without a key: 401; logs name the keys, never show them"
echo "PASS"
