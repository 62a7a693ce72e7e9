"""Encoder cascade (issue 19): MiniLM decides first, e5 only when MiniLM's decision is
not a high-tier route. Routes from each train split, zero-label, both routers.

    ROUTECORE_HOME=/tmp/rchome python benches/cascade.py [--fast PATH] [--strong PATH] \\
        [--sets clinc150,massive-en] [--timed 300] [--head off]

Both routers are the default's (the exemplar head); ``--head off``: the cosine softmax.

Decisions: each router's decision step on cached embeddings (as `routecore eval`).
Per set: the share served by the fast router alone; accuracy (a routed query right,
an out-of-scope query declined; clarifications count as not right) and routed
precision of the cascade, of the strong router alone and of the fast one alone.
Timing (``--timed N`` queries, query caches off, real encoders): route() p50/p95
of fast alone, strong alone and the cascade (`routecore.routers.cascade.Cascade`).

With a latency-only strong model (the bge-m3-shaped random-weight ONNX of
`../shared/models/bge-m3-shaped`), `--timing-only --strong-shots 5` skips the
strong router's accuracy (its embeddings mean nothing) and builds its tables
from 5 exemplars per route (its route() time is the encoder's; the scan of 750
or 15,000 rows is under a millisecond either way):

    python benches/cascade.py --fast "" --strong /tmp/bgem3 --timing-only --strong-shots 5 --sets clinc150
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from routecore import Encoder  # noqa: E402
from routecore.evaluation.runner import build_router, embed  # noqa: E402
from routecore.routers.cascade import Cascade  # noqa: E402
from zero_label_decisions import decide, splits  # noqa: E402

MINILM = "/work/shared/models/all-minilm-l6-v2"


def figures(dec: list, gold: list[str]) -> dict[str, float]:
    right = [(a == "route" and r == g) or (g == "oos" and a == "none") for (a, r, _, _), g in zip(dec, gold)]
    routed = [r == g for (a, r, _, _), g in zip(dec, gold) if a == "route"]
    return {
        "accuracy": round(100 * float(np.mean(right)), 2),
        "routed": round(100 * len(routed) / len(gold), 1),
        "routed_precision": round(100 * float(np.mean(routed)), 2) if routed else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fast", default=MINILM)
    ap.add_argument("--strong", default=None, help="model folder (default: the bundled e5)")
    ap.add_argument("--sets", default="clinc150,massive-en")
    ap.add_argument("--timed", type=int, default=300)
    ap.add_argument("--strong-shots", type=int, default=None, help="exemplars per route of the strong router")
    ap.add_argument(
        "--head",
        choices=["exemplars", "off"],
        default="exemplars",
        help="both routers' head (default: the default's)",
    )
    ap.add_argument(
        "--timing-only", action="store_true", help="the strong model is for latency only: no accuracy figures"
    )
    a = ap.parse_args()
    load = lambda path, **kw: Encoder.load(path or None, **kw)  # noqa: E731 - "" or no path: the bundled e5
    fe, se = load(a.fast), load(a.strong)
    for name in a.sets.split(","):
        train, test = splits(name, "test")
        head = "exemplars" if a.head == "exemplars" else False
        fast, strong = (
            build_router(train, fe, head=head),
            build_router(train, se, shots=a.strong_shots, head=head),
        )
        texts, gold = [s.text for s in test.samples], [s.label for s in test.samples]
        df = decide(fast, embed(fe, texts), texts)
        served = [a_ == "route" and t == "high" for a_, _, t, _ in df]
        out = {
            "set": name,
            "head": a.head,
            "fast": fe.model_id,
            "strong": se.model_id,
            "queries": len(gold),
            "served_by_fast": round(100 * float(np.mean(served)), 1),
            "fast_alone": figures(df, gold),
        }
        if not a.timing_only:
            ds = decide(strong, embed(se, texts), texts)
            cascade = [f if s else g for f, g, s in zip(df, ds, served)]
            out.update(cascade=figures(cascade, gold), strong_alone=figures(ds, gold))
            out["accuracy_vs_strong"] = round(out["cascade"]["accuracy"] - out["strong_alone"]["accuracy"], 2)
        if a.timed:
            fast.encoder, strong.encoder = load(a.fast, cache_size=0), load(a.strong, cache_size=0)
            c = Cascade(fast, strong)
            rng = np.random.default_rng(0)
            sample = [texts[i] for i in rng.choice(len(texts), a.timed, replace=False)]
            ms: dict[str, list[float]] = {"fast": [], "strong": [], "cascade": []}
            for q in sample[:20]:
                c.route(q)
                strong.route(q)
            c.served = {"fast": 0, "strong": 0}
            for q in sample:  # interleaved, so that machine noise hits all three alike
                for key, fn in (("fast", fast.route), ("strong", strong.route), ("cascade", c.route)):
                    t0 = time.perf_counter()
                    fn(q)
                    ms[key].append((time.perf_counter() - t0) * 1e3)
            out["timing_ms"] = {
                k: {
                    "p50": round(float(np.percentile(v, 50)), 2),
                    "p95": round(float(np.percentile(v, 95)), 2),
                }
                for k, v in ms.items()
            }
            out["timed_served_by_fast"] = round(100 * c.fast_share, 1)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
