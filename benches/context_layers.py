"""What the context layers cost (issue 19 budget: <= 20 % over a single-layer route() at the
same total number of exemplars).

    python benches/context_layers.py [--queries 300]

`ContextRouter.from_config(examples/context.yaml)` (intent, urgency, sensitivity, domain)
against one Router holding every layer's routes as one route set (same exemplars, same
encoder, query cache off). Queries: CLINC150 test rows, the calls interleaved. Prints
p50/p95 of the whole call and of the part after the encoder, and (``per_layer_rest``) of
the layers decided one route() at a time on the one vector, as detect() did before it
scored every layer in one native call.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from routecore import Encoder, Router
from routecore.evaluation import datasets as D
from routecore.examples import __file__ as examples
from routecore.routers.context import ContextRouter


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=300)
    a = ap.parse_args()
    enc = Encoder.load(cache_size=0)
    cr = ContextRouter.from_config(Path(examples).parent / "context.yaml", encoder=enc)
    merged = [
        replace(r, name=f"{layer}:{r.name}")
        for layer, router in cr.layers.items()
        for r in router.route_specs
    ]
    one = Router(merged, encoder=enc, entities=next(iter(cr.layers.values())).entities)
    n_ex = sum(len(r.exemplars()) for r in merged)
    qs = [s.text for s in D.clinc150("test").samples][: a.queries]
    for q in qs[:20]:
        cr.detect(q)
        one.route(q)
    t: dict[str, list[float]] = {
        "detect": [],
        "route": [],
        "detect_rest": [],
        "route_rest": [],
        "per_layer_rest": [],
    }
    for q in qs:
        t0 = time.perf_counter()
        ctx = cr.detect(q)
        t1 = time.perf_counter()
        d = one.route(q)
        t2 = time.perf_counter()
        # What detect() did before one native call served every layer: a route() per layer on the one vector.
        v = enc.encode([q])[0]
        t3 = time.perf_counter()
        for router in cr.layers.values():
            router.route(q, vector=v)
        t4 = time.perf_counter()
        t["detect"].append((t1 - t0) * 1e3)
        t["route"].append((t2 - t1) * 1e3)
        t["detect_rest"].append((t1 - t0) * 1e3 - ctx.timings.encode)
        t["route_rest"].append((t2 - t1) * 1e3 - d.timings.tokenize - d.timings.encode)
        t["per_layer_rest"].append((t4 - t3) * 1e3)
    out = {
        k: {"p50": round(float(np.percentile(v, 50)), 3), "p95": round(float(np.percentile(v, 95)), 3)}
        for k, v in t.items()
    }
    out["exemplars"] = n_ex
    out["layers"] = list(cr.layers)
    out["overhead_p50"] = round(out["detect"]["p50"] / out["route"]["p50"] - 1, 3)
    out["overhead_p95"] = round(out["detect"]["p95"] / out["route"]["p95"] - 1, 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
