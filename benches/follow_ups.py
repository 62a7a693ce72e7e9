"""Follow-ups: a query read alone, after the previous turn's text (``previous_query``), or joined to it.

    ROUTECORE_HOME=/tmp/rchome python benches/follow_ups.py [--model PATH] [--sets a,b] [--shots 5,10]
        [--seeds 3] [--limit 400] [--split dev|test]

The intent sets hold no conversations, so each query of the dev split is paired with an earlier
turn drawn from the same split (fixed seed), in three kinds of pairs:

- ``same``: the earlier turn is another query of the same label (the conversation continues);
- ``switch``: the earlier turn is a query of another label (the topic changes);
- ``oos``: the query is one of CLINC150's out-of-scope queries (all of the split's), the earlier
  turn an in-scope query (a question the routes do not serve, asked mid-conversation).

For each pair and router (``few_shot.build``: k sampled train utterances per label, zero-label, no
LLM), three readings of the query:

- ``alone``: ``route_batch(queries)``;
- ``context``: ``route_batch(queries, previous_query=earlier)``, the library's follow-up reading
  (alone first; when not routed, after the earlier text, kept when it names the query's own best route);
- ``joined``: ``route_batch(earlier + "\\n" + query)``, what routing the last two turns as one text does.

Reported per set, k, kind and reading, as the mean over seeds: ``right`` (routed to the query's
label), ``wrong`` (routed elsewhere; every routed ``oos`` query is wrong) and ``to_prev`` (routed,
wrongly, to the earlier turn's label), in % of the pairs. The same pairs serve every reading.
Embeddings of the queries and joined texts are cached under ``$ROUTECORE_HOME``.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from typing import Any

import numpy as np

import few_shot as F
from routecore import Encoder
from routecore.evaluation.runner import embed

READINGS = ("alone", "context", "joined")


def pairs_of(test: Any, full: Any, seed: int = 7) -> dict[str, list[tuple[Any, Any]]]:
    """(earlier turn, query) pairs of each kind (module docstring)."""
    rng = np.random.default_rng(seed)
    by: dict[str, list[Any]] = defaultdict(list)
    for s in test.samples:
        by[s.label].append(s)
    ins = [s for s in test.samples if s.label != "oos"]
    out: dict[str, list[tuple[Any, Any]]] = {"same": [], "switch": [], "oos": []}
    for s in ins:
        same = [o for o in by[s.label] if o is not s]
        if same:
            out["same"].append((same[rng.integers(len(same))], s))
        other = [o for o in ins if o.label != s.label]
        out["switch"].append((other[rng.integers(len(other))], s))
    for s in full.samples:
        if s.label == "oos":
            out["oos"].append((ins[rng.integers(len(ins))], s))
    return {k: v for k, v in out.items() if v}


def shares(decs: list[Any], gold: list[str], prev: list[str]) -> tuple[float, float, float]:
    n = len(decs)
    routed = [d.action == "route" for d in decs]
    right = sum(r and d.route == g for r, d, g in zip(routed, decs, gold))
    wrong = sum(r and d.route != g for r, d, g in zip(routed, decs, gold))
    to_prev = sum(r and d.route == p != g for r, d, g, p in zip(routed, decs, gold, prev))
    return 100 * right / n, 100 * wrong / n, 100 * to_prev / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--sets", default="clinc150,banking77,massive-en")
    ap.add_argument("--shots", default="5,10")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--limit", type=int, default=400)
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    a = ap.parse_args()
    enc = Encoder.load(a.model) if a.model else Encoder.load()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"# model {enc.model_id}, split {a.split}, seeds {a.seeds}, limit {a.limit}, {when}")
    print("| set | k | pairs | " + " | ".join(f"{r}: right / wrong / to_prev" for r in READINGS) + " |")
    print("|---" * (len(READINGS) + 3) + "|")
    for name in a.sets.split(","):
        train, full, test, vec = F.set_up(enc, name, a.split, a.limit)
        for kind, ps in pairs_of(test, full).items():
            q = [p[1].text for p in ps]
            earlier = [p[0].text for p in ps]
            joined = [f"{e}\n{t}" for e, t in zip(earlier, q)]
            Xq, Xj = embed(enc, q), embed(enc, joined)
            gold, prev = [p[1].label for p in ps], [p[0].label for p in ps]
            for k in (int(x) for x in a.shots.split(",")):
                got: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
                for seed in range(a.seeds):
                    r = F.build(enc, train, vec, k, seed)
                    got["alone"].append(shares(r.route_batch(q, vectors=Xq), gold, prev))
                    ctx = r.route_batch(q, vectors=Xq, previous_query=earlier)
                    got["context"].append(shares(ctx, gold, prev))
                    got["joined"].append(shares(r.route_batch(joined, vectors=Xj), gold, prev))
                cells = [" / ".join(f"{v:.1f}" for v in np.mean(got[m], axis=0)) for m in READINGS]
                print(f"| {name} {kind} | {k} | {len(ps)} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
