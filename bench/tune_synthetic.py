#!/usr/bin/env python3
"""A synthetic labeled set for `clef tune` (docs/performance.md, "clef tune"): each record's state
is filler text with one keyword that tells the answer, so a head that reads the state can learn
it and one that does not cannot. Deterministic for a seed.

  bench/tune_synthetic.py --records 120 --seed 1 > train.jsonl
  bench/tune_synthetic.py --records 60 --seed 2 > validation.jsonl

Questions: "team" (choice among four teams, told by a team keyword), "outage" (noul, true when
an outage word appears) and "urgency" (score 0-2, told by an urgency word). Gold labels, one
record in five with soft targets instead (--soft 0 turns them off).
"""
import argparse
import json
import random

TEAMS = {"billing": ["billing"], "network": ["network"], "identity": ["identity"],
         "storage": ["storage"]}
URGENCY = [["whenever"], ["soon"], ["now"]]
FILLER = ("the customer wrote to us about their account and asked for help with the service "
          "they use every day at work with their team").split()


def record(rng, soft):
    team = rng.choice(sorted(TEAMS))
    outage = rng.random() < 0.5
    level = rng.randrange(3)
    words = rng.sample(FILLER, 12)
    for w in (rng.choice(TEAMS[team]), rng.choice(URGENCY[level])) + (("outage",) if outage else ()):
        words.insert(rng.randrange(len(words) + 1), w)
    request = {
        "state": " ".join(words),
        "questions": {
            "team": {"type": "choice", "instructions": "Which team owns this ticket?",
                     "criteria": {t: "the " + t + " team" for t in sorted(TEAMS)}},
            "outage": {"type": "noul", "instructions": "Is an outage reported?"},
            "urgency": {"type": "score", "instructions": "How urgent is it?",
                        "criteria": ["Not urgent", "Soon", "Now"]},
        },
    }
    if soft and rng.random() < 0.2:
        others = [t for t in sorted(TEAMS) if t != team]
        request["targets"] = {"team": {team: 0.85, **{t: 0.05 for t in others}}}
        request["gold"] = {"outage": outage, "urgency": level}
    else:
        request["gold"] = {"team": team, "outage": outage, "urgency": level}
    return request


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=120)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--soft", type=int, default=1, help="1: one record in five has soft targets")
    a = p.parse_args()
    rng = random.Random(a.seed)
    for i in range(a.records):
        r = record(rng, a.soft)
        r["id"] = f"s{a.seed}-{i}"
        print(json.dumps(r))


if __name__ == "__main__":
    main()
