"""int8 against f32 routers on real data: the same CLINC150 router (all train
utterances as exemplars, 15,000+ x d, so int8 under storage="auto") over int8
and over f32 storage, and how often their decisions (action, route, tier),
best exemplars and clarify candidates agree on the CLINC150 test split.

    python benches/int8_decisions.py [MODEL] [--n N]

Query embeddings come from the encoder's disk cache of benches/eval_targets.py
when present, so this takes a minute, not ten.
"""

from __future__ import annotations

import argparse
import datetime

import numpy as np

from routecore import Encoder, TableVectors
from routecore.evaluation import datasets as D
from routecore.evaluation import runner as R
from routecore.routers.router import Router


class _Fixed:
    """An encoder that returns precomputed query embeddings (timing is not measured here)."""

    def __init__(self, enc, table):
        self.dim, self.model_id, self._table = enc.dim, enc.model_id, table

    def encode_with_stats(self, texts, kind="query"):
        from routecore.core.encoder import EncodeOutput

        return EncodeOutput(np.stack([self._table[t] for t in texts]), (), 0.0, 0.0, 0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default=None)
    ap.add_argument("--n", type=int, default=None, help="test queries (default: all)")
    a = ap.parse_args()
    enc = Encoder.load(a.model)
    train, test = D.clinc150("train"), D.clinc150("test")
    samples = test.samples[: a.n]
    texts = [s.text for s in samples]
    fixed = _Fixed(enc, dict(zip(texts, R.embed(enc, texts))))
    r8 = R.build_router(train, fixed)
    r32 = Router(
        r8.route_specs,
        encoder=fixed,
        policy=r8.policy,
        storage="f32",
        vectors=TableVectors(routes=r8.route_table.table.index.vectors()[1]),
    )
    assert (r8.route_table.table.storage, r32.route_table.table.storage) == ("int8", "f32")
    same = same_all = 0
    bounds = []
    for t in texts:
        a8, a32 = r8.route(t), r32.route(t)
        same += (a8.action, a8.route, a8.tier) == (a32.action, a32.route, a32.tier)
        same_all += (
            a8.action,
            a8.route,
            a8.tier,
            a8.candidates,
            a8.bias_rule,
            [e.text for e in a8.top_exemplars],
        ) == (
            a32.action,
            a32.route,
            a32.tier,
            a32.candidates,
            a32.bias_rule,
            [e.text for e in a32.top_exemplars],
        )
        bounds.extend(v for v in a8.score_bounds.values() if v > 0)
    now = datetime.datetime.now(datetime.timezone.utc)
    print(
        f"{now:%Y-%m-%d %H:%M} UTC, {enc.model_id}, {len(r8.route_table.table.texts)} exemplars, "
        f"{len(texts)} CLINC150 test queries"
    )
    print(
        f"same (action, route, tier): {same}/{len(texts)}; "
        f"same including candidates, bias rule and best exemplars: {same_all}/{len(texts)}"
    )
    print(
        f"estimated routes per decision: {len(bounds) / len(texts):.0f}; "
        f"their error bounds: median {np.median(bounds):.4f}, max {max(bounds):.4f}"
    )


if __name__ == "__main__":
    main()
