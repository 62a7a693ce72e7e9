"""What a wider out-of-scope margin would trade (issue 34: in-scope ``none`` <= 5 % against
CLINC150's out-of-scope ``none`` >= 70 % at k = 10).

    ROUTECORE_HOME=/tmp/rchome python benches/scope_margin.py [--sets massive-en,clinc150]
        [--shots 5,10] [--seeds 3] [--limit 1000] [--margins 1,1.5,2,3]

The few-shot bench's routers (``few_shot.build``, dev split, the same query sample; CLINC150's
out-of-scope queries all of val's). The exemplar head declines a query when its "none of these"
class is at least as likely as the best route, or when the best route is under the scope cut. For
each margin m, the queries the router declines that would stay declined if the first rule asked
for "none of these" >= m x the best route (m = 1: today's rule): the share of in-scope queries
and of out-of-scope queries declined. Nothing else changes; m is not a setting of the router.
"""

from __future__ import annotations

import argparse

import numpy as np

from few_shot import build, pool, sample, splits
from routecore import Encoder
from routecore.calibrate.exemplar_head import in_scope_probs
from routecore.evaluation.runner import embed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="massive-en,clinc150")
    ap.add_argument("--shots", default="5,10")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--limit", type=int, default=1000)
    ap.add_argument("--margins", default="1,1.5,2,3")
    a = ap.parse_args()
    margins = [float(m) for m in a.margins.split(",")]
    enc = Encoder.load()
    print(f"# model {enc.model_id}, dev, seeds {a.seeds}; in-scope none / out-of-scope none, %")
    print("| set | k | " + " | ".join(f"m = {m:g}" for m in margins) + " |")
    print("|---" * (len(margins) + 2) + "|")
    for name in a.sets.split(","):
        train, full = splits(name, "dev")
        train, test = pool(train, 60), sample(full, a.limit)
        kept = {id(s) for s in test.samples}
        texts = [s.text for s in test.samples] + [
            s.text for s in full.samples if s.label == "oos" and id(s) not in kept
        ]
        gold = np.array([s.label for s in test.samples] + ["oos"] * (len(texts) - len(test.samples)))
        X = embed(enc, texts, what=f"embedding {name}")
        tt = list(dict.fromkeys(s.text for s in train.samples))
        vec = dict(zip(tt, embed(enc, tt, what=f"embedding {name} train")))
        ins = gold != "oos"
        for k in (int(x) for x in a.shots.split(",")):
            cells: dict[float, list[tuple[float, float]]] = {m: [] for m in margins}
            for seed in range(a.seeds):
                router = build(enc, train, vec, k, seed)
                declined = np.array([d.action == "none" for d in router.route_batch(texts, vectors=X)])
                head = router.route_table.head
                assert head is not None, "the few-shot routers decide with the exemplar head"
                P, oos, _ = in_scope_probs(head, X)
                best = P.max(axis=1)
                by_class = oos >= best  # else the best route is under the scope cut
                for m in margins:
                    kept_none = declined & (~by_class | (oos >= m * best))
                    out = kept_none[~ins].mean() if (~ins).any() else float("nan")
                    cells[m].append((float(kept_none[ins].mean()), float(out)))
            row = " | ".join(
                f"{100 * np.mean([c[0] for c in cs]):.1f} / {100 * np.nanmean([c[1] for c in cs]):.1f}"
                if (~ins).any()
                else f"{100 * np.mean([c[0] for c in cs]):.1f} / –"
                for cs in cells.values()
            )
            print(f"| {name} | {k} | {row} |", flush=True)


if __name__ == "__main__":
    main()
