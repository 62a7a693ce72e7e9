"""How many options a clarification would need to hold the right route (issue 34: options >= 90 %).

    ROUTECORE_HOME=/tmp/rchome python benches/clarify_options.py [--sets banking77,massive-en]
        [--shots 5,10] [--seeds 3] [--limit 1000]

The few-shot bench's routers (``few_shot.build``: k sampled train utterances per label, no fit, dev
split, the same query sample). For the in-scope queries a router clarifies, the share whose right
route is among the best m routes by probability (m = 2..6), the share its own question holds
(``opts``), and for a set of the routes that hold a share tau of the probability (tau = 0.8, 0.9),
its mean size and what share of the clarifications it covers.
"""

from __future__ import annotations

import argparse

import numpy as np

from few_shot import build, pool, sample, splits
from routecore import Encoder
from routecore.evaluation.runner import embed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="banking77,massive-en")
    ap.add_argument("--shots", default="5,10")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--limit", type=int, default=1000)
    a = ap.parse_args()
    enc = Encoder.load()
    print(f"# model {enc.model_id}, dev, seeds {a.seeds}")
    print("| set | k | clarified | opts | top2 | top3 | top4 | top5 | top6 | mass 0.8: size, cover | 0.9 |")
    print("|---" * 11 + "|")
    for name in a.sets.split(","):
        train, test = splits(name, "dev")
        train, test = pool(train, 60), sample(test, a.limit)
        texts, gold = [s.text for s in test.samples], [s.label for s in test.samples]
        X = embed(enc, texts, what=f"embedding {name}")
        tt = list(dict.fromkeys(s.text for s in train.samples))
        vec = dict(zip(tt, embed(enc, tt, what=f"embedding {name} train")))
        for k in (int(x) for x in a.shots.split(",")):
            ranks, held, mass = [], [], {0.8: ([], []), 0.9: ([], [])}
            for seed in range(a.seeds):
                for d, g in zip(build(enc, train, vec, k, seed).route_batch(texts, vectors=X), gold):
                    if g == "oos" or d.action != "clarify":
                        continue
                    order = sorted(d.probabilities, key=d.probabilities.__getitem__, reverse=True)
                    rank = order.index(g) if g in order else len(order)
                    ranks.append(rank)
                    held.append(g in d.candidates)
                    p = np.array([d.probabilities[o] for o in order])
                    for tau, (size, cover) in mass.items():
                        m = int(np.searchsorted(np.cumsum(p / p.sum()), tau) + 1)
                        size.append(m)
                        cover.append(rank < m)
            r = np.array(ranks)
            tops = " | ".join(f"{100 * np.mean(r < m):.1f}" for m in range(2, 7))
            sets = " | ".join(f"{np.mean(s):.1f}, {100 * np.mean(c):.1f}" for s, c in mass.values())
            print(f"| {name} | {k} | {len(r)} | {100 * np.mean(held):.1f} | {tops} | {sets} |", flush=True)


if __name__ == "__main__":
    main()
