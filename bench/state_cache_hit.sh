#!/usr/bin/env bash
# The state cache on one model, through `clef serve` with its default (planned) state cache: a
# ~2,000-token state decided once (cold, it fills the cache), the same state asked new questions
# (a hit: only the questions are prefilled), and another state of the same length asked those new
# questions (cold). Prints each time (curl's total) and warm/cold. Run it alone.
#   bash bench/state_cache_hit.sh MODEL_DIR [WORDS (default 1650, about 2,000 tokens)]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=$1; words=${2:-1650}
work=$(mktemp -d)
trap 'kill "$CLEF_PID" 2>/dev/null || true; rm -rf "$work"' EXIT
source "$root/bench/serve_lib.sh"
start_clef "$root/build/clef" "$work" serve --model-dir "$model" --threads 2
request() {  # SEED QUESTIONS(card|new) FILE: a state of $words common words and the questions
  python3 - "$1" "$2" "$words" "$root/examples/card.json" > "$3" <<'PY'
import json, random, sys
seed, which, words, card = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), json.load(open(sys.argv[4]))
random.seed(seed)
vocab = ("the database server customer login error timeout network outage request cache disk "
         "memory latency region cluster deploy rollback incident alert page team billing").split()
card["state"] = " ".join(random.choice(vocab) for _ in range(words))
if which == "new":
    card["questions"] = {
        "sentiment": {"type": "choice", "instructions": "How does the customer feel?",
                      "criteria": {"calm": "Neutral wording", "upset": "Frustrated or angry"}},
        "escalate": {"type": "noul", "instructions": "Should a manager see this?"},
        "impact": {"type": "score", "instructions": "How many customers are affected?",
                   "criteria": ["One", "A few", "Many", "All"]}}
print(json.dumps(card))
PY
}
time_of() {  # FILE -> seconds and input tokens
  curl -s -o "$work/out.json" -w '%{time_total}' "localhost:$CLEF_PORT/v1/decisions" \
    -H 'content-type: application/json' -d @"$1"
  echo " $(sed -n 's/.*"input_tokens":\([0-9]*\).*/\1/p' "$work/out.json")"
}
request 1 card "$work/a.json"; request 1 new "$work/b.json"; request 2 new "$work/c.json"
echo "== $(date -u '+%F %T') commit $(git -C "$root" rev-parse --short HEAD), $model, $(grep -o 'state cache up to.*' "$work/serve.log" | head -1)"
read -r first tokens < <(time_of "$work/a.json")
read -r warm _ < <(time_of "$work/b.json")
read -r cold _ < <(time_of "$work/c.json")
printf 'state %s tokens: first %.2f s, same state new questions (hit) %.2f s, other state new questions (cold) %.2f s, warm/cold %.3f\n' \
  "$tokens" "$first" "$warm" "$cold" "$(awk -v a="$warm" -v b="$cold" 'BEGIN {print a / b}')"
stop_clef "$CLEF_PID" || true
