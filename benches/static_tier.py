"""The static tier (issue 38): a static table distilled from the transformer decides first, the
transformer only when the table's router does not route at the high tier.

    ROUTECORE_HOME=/tmp/rchome python benches/static_tier.py [--model PATH] [--static NAME|PATH]
        [--sets clinc150,banking77,massive-en,massive-fr,massive-zh] [--shots full,10]
        [--timed 300] [--json OUT]

Routes from each train split (``full``: every row; ``10``: 10 per label, seed 0), the default
policy (exemplar head, zero-label calibration), one router per encoder. Dev splits as in
benches/few_shot.py: CLINC150 val, MASSIVE dev, BANKING77 the last fifth of each label's train rows.

Decisions: each router's decision step on cached embeddings (as benches/cascade.py). Per set and
shots: the share served by the static tier and the precision among those queries; accuracy (a
routed query right, an out-of-scope query declined) of the cascade, of the transformer alone and of
the table alone; the static tier's coverage (share of the dev queries' pieces that have a row).

Timing (``--timed N`` dev queries, query caches off, one process, 2 cores):
``Cascade.route`` p50/p95 of the statically served queries and of all of them, the transformer
alone, and ``route_batch`` throughput (batches of 64) over statically served queries.
``--encode-only``: the table's microseconds per dev query, one query a call.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cascade import figures  # noqa: E402
from few_shot import splits  # noqa: E402
from routecore import Encoder  # noqa: E402
from routecore.evaluation.runner import build_router, embed  # noqa: E402
from routecore.hub import models
from routecore.hub.distill import static_name  # noqa: E402
from routecore.routers.cascade import Cascade  # noqa: E402
from zero_label_decisions import decide  # noqa: E402


def coverage(enc: Any, texts: list[str]) -> float:
    """Share of the texts' pieces that have a row in the table."""
    ids = set(np.fromfile(enc.path / "token_ids.u32", dtype="<u4").tolist())
    pieces = [p for t in texts for p in enc.tokenize(t)[0]]
    return round(100 * sum(p in ids for p in pieces) / max(len(pieces), 1), 2)


def pct(v: list[float]) -> dict[str, float]:
    return {"p50": round(float(np.percentile(v, 50)), 3), "p95": round(float(np.percentile(v, 95)), 3)}


def timing(fast: Any, strong: Any, texts: list[str], n: int, a: argparse.Namespace) -> dict[str, Any]:
    fast.encoder = Encoder.load(a.static)
    strong.encoder = Encoder.load(a.model, cache_size=0, spinning=not a.no_spin)
    c = Cascade(fast, strong)
    rng = np.random.default_rng(0)
    sample = [texts[i] for i in rng.choice(len(texts), min(n, len(texts)), replace=False)]
    for q in sample[:20]:
        c.route(q)
        strong.route(q)
    ms: dict[str, list[float]] = {"cascade_static": [], "cascade_all": [], "transformer": []}
    served: list[str] = []
    for q in sample:
        t0 = time.perf_counter()
        d = c.route(q)
        dt = (time.perf_counter() - t0) * 1e3
        ms["cascade_all"].append(dt)
        if [a_ for a_ in d.alerts if a_.kind == "cascade"][0].data["encoder_tier"] == "static":
            ms["cascade_static"].append(dt)
            served.append(q)
        t0 = time.perf_counter()
        strong.route(q)
        ms["transformer"].append((time.perf_counter() - t0) * 1e3)
    out: dict[str, Any] = {k: pct(v) for k, v in ms.items() if v}
    out["timed"] = len(sample)
    if served:
        batch = (served * (4096 // len(served) + 1))[:4096]
        c.route_batch(batch[:64])
        t0 = time.perf_counter()
        for i in range(0, len(batch), 64):
            c.route_batch(batch[i : i + 64])
        out["route_batch_static_qps"] = round(len(batch) / (time.perf_counter() - t0))
    return out


def encode_us(enc: Any, texts: list[str]) -> dict[str, Any]:
    """Microseconds per text, one text a call (the table runs on the calling thread): in the core
    (tokenize + gather + mean, from the encoder's own timers) and through ``Encoder.encode``."""
    for t in texts[:200]:
        enc.encode(t)
    core, call = [], []
    for t in texts:
        t0 = time.perf_counter()
        out = enc.encode_with_stats(t)
        call.append((time.perf_counter() - t0) * 1e6)
        core.append((out.tokenize_ms + out.infer_ms) * 1e3)
    pieces = float(np.mean([len(p) for p in enc.tokenize(texts)]))
    return {
        "texts": len(texts),
        "pieces_mean": round(pieces, 1),
        "core_us": pct(core),
        "encode_us": pct(call),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="the transformer (default: the bundled e5)")
    ap.add_argument("--static", default=None, help="the table (default: <model>-static in the cache)")
    ap.add_argument("--sets", default="clinc150,banking77,massive-en,massive-fr,massive-zh")
    ap.add_argument("--shots", default="full,10")
    ap.add_argument("--timed", type=int, default=300)
    ap.add_argument(
        "--no-spin", action="store_true", help="the transformer's ONNX Runtime threads do not spin"
    )
    ap.add_argument("--json", default=None, help="also write every row to this file")
    ap.add_argument("--encode-only", action="store_true", help="only the table's time per text")
    a = ap.parse_args()
    a.static = a.static or static_name(models.resolve(a.model))
    se = Encoder.load(a.static)
    if a.encode_only:
        for name in a.sets.split(","):
            texts = [s.text for s in splits(name, "dev")[1].samples]
            print(json.dumps({"set": name, **encode_us(se, texts)}), flush=True)
        return
    te = Encoder.load(a.model)
    print(f"# static {se.model_id} ({se.rows} rows x {se.dim}), transformer {te.model_id}", flush=True)
    rows = []
    for name in a.sets.split(","):
        train, dev = splits(name, "dev")
        texts, gold = [s.text for s in dev.samples], [s.label for s in dev.samples]
        xs, xt = embed(se, texts), embed(te, texts)
        for shots in a.shots.split(","):
            k = None if shots == "full" else int(shots)
            fast = build_router(train, se, shots=k, head="exemplars")
            strong = build_router(train, te, shots=k, head="exemplars")
            df, dt = decide(fast, xs, texts), decide(strong, xt, texts)
            static = [a_ == "route" and t == "high" for a_, _, t, _ in df]
            right = [r == g for (_, r, _, _), g, s in zip(df, gold, static) if s]
            cascade = [f if s else g for f, g, s in zip(df, dt, static)]
            row: dict[str, Any] = {
                "set": name,
                "shots": shots,
                "queries": len(gold),
                "served_static": round(100 * float(np.mean(static)), 1),
                "static_precision": round(100 * float(np.mean(right)), 2) if right else None,
                "cascade": figures(cascade, gold),
                "transformer": figures(dt, gold),
                "static_alone": figures(df, gold),
            }
            row["accuracy_vs_transformer"] = round(
                row["cascade"]["accuracy"] - row["transformer"]["accuracy"], 2
            )
            if k is None:
                row["piece_coverage"] = coverage(se, texts)
            if a.timed:
                row["timing_ms"] = timing(fast, strong, texts, a.timed, a)
            rows.append(row)
            print(json.dumps(row), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps({"static": se.model_id, "transformer": te.model_id, "rows": rows}))


if __name__ == "__main__":
    main()
