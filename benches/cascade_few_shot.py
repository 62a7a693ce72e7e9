"""Few-shot decisions of an encoder cascade, with and without ``combine`` (issue 34: small configs).

    ROUTECORE_HOME=/tmp/rchome python benches/cascade_few_shot.py [--fast PATH|NAME] [--sets a,b]
        [--shots 5,10,20] [--seeds 5] [--limit 1000] [--split dev|test] [--modes strong,product] [--batch 32]
        [--route-precision P]

``benches/few_shot.py``'s configs (k sampled utterances per label, zero-label, the same queries and
columns), each built twice: with the fast encoder (default: MiniLM from ``../shared/models``) and
the bundled e5, as :class:`routecore.routers.cascade.Cascade` joins them. Every query goes through
``Cascade.route_batch``, ``--batch`` at a time as a server sends them (each encoder's query cache keeps
the second pass cheap). Modes: ``strong``,
an escalated query is decided by e5 alone (the cascade's default); ``product``, on both routers'
probabilities (``combine=True``). ``e5`` adds e5 alone on the same queries. Extra column: ``fast``,
the share of queries the fast router served. ``--route-precision P``: every router sets
``policy.routes.route_precision`` to P (the pair's levels measured for it), and ``oracle`` is read at P.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import few_shot as F  # noqa: E402
from routecore import Encoder  # noqa: E402
from routecore.evaluation.runner import embed  # noqa: E402
from routecore.routers.cascade import Cascade  # noqa: E402

MODELS = Path(os.environ.get("ROUTECORE_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "models"
COLS = F.COLS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fast", default=str(MODELS / "all-minilm-l6-v2"))
    ap.add_argument("--sets", default="clinc150,banking77,massive-en")
    ap.add_argument("--shots", default="5,10,20")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--limit", type=int, default=1000)
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--modes", default="e5,strong,product")
    ap.add_argument(
        "--batch", type=int, default=32, help="queries a route_batch call, as a server sends them"
    )
    ap.add_argument("--route-precision", type=float, help="every router's policy.routes.route_precision")
    a = ap.parse_args()
    goal = a.route_precision
    fast_enc, strong_enc = Encoder.load(a.fast, cache_size=8192), Encoder.load(cache_size=8192)
    print(
        f"# fast {fast_enc.model_id}, strong {strong_enc.model_id}, split {a.split}, seeds {a.seeds}, "
        f"route_precision {goal or 'unset'}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print(
        "| set | k | mode | "
        + " | ".join(COLS)
        + " | fast | routed spread |\n"
        + "|---" * (len(COLS) + 5)
        + "|"
    )
    for name in a.sets.split(","):
        train, test = F.splits(name, a.split)
        full, train, test = test, F.pool(train), F.sample(test, a.limit)
        kept = {id(s) for s in test.samples}
        oos = [s.text for s in full.samples if s.label == "oos" and id(s) not in kept]
        texts, gold = [s.text for s in test.samples], np.array([s.label for s in test.samples], dtype=object)
        tt = list(dict.fromkeys(s.text for s in train.samples))
        vf = dict(zip(tt, embed(fast_enc, tt, what=f"embedding {name} train (fast)")))
        vs = dict(zip(tt, embed(strong_enc, tt, what=f"embedding {name} train")))
        P = goal or F.TARGET.get(name, 0.95)
        for k in (int(x) for x in a.shots.split(",")):
            for mode in a.modes.split(","):
                rs = []
                for seed in range(a.seeds):
                    strong = F.build(strong_enc, train, vs, k, seed, goal=goal)
                    if mode == "e5":
                        decs, extra, share = (
                            strong.route_batch(texts),
                            strong.route_batch(oos) if oos else [],
                            0.0,
                        )
                    else:
                        fast = F.build(fast_enc, train, vf, k, seed, goal=goal)
                        c = Cascade(fast, strong, combine=mode == "product")
                        decs = [
                            d
                            for i in range(0, len(texts), a.batch)
                            for d in c.route_batch(texts[i : i + a.batch])
                        ]
                        share = c.fast_share
                        extra = c.route_batch(oos) if oos else []
                    rs.append({**F.figures(decs, gold, P, extra), "fast": share})
                m = {c: float(np.nanmean([r.get(c, np.nan) for r in rs])) for c in (*COLS, "fast")}
                spread = max(r["routed"] for r in rs) - min(r["routed"] for r in rs)
                cells = [f"{m[c]:.3f}" if c == "auroc" else f"{100 * m[c]:.1f}" for c in (*COLS, "fast")]
                print(
                    f"| {name} | {k} | {mode} | " + " | ".join(cells) + f" | {100 * spread:.1f} |", flush=True
                )


if __name__ == "__main__":
    main()
