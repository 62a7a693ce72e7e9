"""Robust input: end-to-end right on perturbed dev queries against clean ones (issue 34 §4).

    ROUTECORE_HOME=/tmp/rchome python benches/robustness.py [--model PATH] [--sets a,b] [--shots 10]
        [--seeds 3] [--limit 500] [--split dev|test] [--kinds typos,emoji,...]

Routers as ``benches/few_shot.py`` builds them (k sampled utterances per label, zero-label);
each dev query (a fixed stratified sample of ``--limit``) is routed clean and under every
perturbation of :mod:`routecore.evaluation.perturb` (typos on 10 % of letters, emoji, upper
case, repeated words, a 20 KB input that starts with the query, one that ends with it), through
``Router.route_batch`` (the encoder included, so long inputs take the router's own long-input
path), each perturbation by a router of its own (a router's traffic cut adapts to the queries it
has seen). Reported: end-to-end right (in-scope
queries routed to the right route) per perturbation, its drop against clean (goal: <= 3 points),
and the routed share.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import few_shot as F  # noqa: E402
from routecore import Encoder  # noqa: E402
from routecore.evaluation.perturb import PERTURBATIONS  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--sets", default=",".join(F.SETS))
    ap.add_argument("--shots", type=int, default=10)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--limit", type=int, default=500)
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument(
        "--kinds", default=",".join(PERTURBATIONS), help="perturbations to run (clean always runs)"
    )
    a = ap.parse_args()
    enc = Encoder.load(a.model) if a.model else Encoder.load()
    print(
        f"# model {enc.model_id}, split {a.split}, k {a.shots}, seeds {a.seeds}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    kinds = ["clean", *a.kinds.split(",")]
    print("| set | " + " | ".join(kinds) + " | worst drop |")
    print("|---" * (len(kinds) + 2) + "|")
    for name in a.sets.split(","):
        train, _, test, vec = F.set_up(enc, name, a.split, a.limit)
        gold = np.array([s.label for s in test.samples], dtype=object)
        ins = gold != "oos"
        right = {kd: [] for kd in kinds}
        for seed in range(a.seeds):
            for kd in kinds:
                # A router of its own per perturbation: its traffic cut adapts to the queries it saw.
                router = F.build(enc, train, vec, a.shots, seed)
                texts = [s.text if kd == "clean" else PERTURBATIONS[kd](s.text, seed) for s in test.samples]
                decs = router.route_batch(texts)
                ok = np.array([d.action == "route" and d.route == g for d, g in zip(decs, gold)])
                right[kd].append(float(ok[ins].mean()))
        m = {kd: 100 * float(np.mean(v)) for kd, v in right.items()}
        drop = max(m["clean"] - m[kd] for kd in kinds[1:])
        print(f"| {name} | " + " | ".join(f"{m[kd]:.1f}" for kd in kinds) + f" | {drop:.1f} |", flush=True)


if __name__ == "__main__":
    main()
