"""Upper bound on the share routed at a precision, for any single confidence score.

    python benches/precision_bound.py [--sets xling-fr,xling-zh,massive-en,...] [--model PATH]

For each set (routes from train, in-scope test queries), ranks the queries by one
confidence signal and reports the largest share whose top-1 accuracy stays at or
above 90 % and 95 % (an oracle threshold on the test split itself, no out-of-scope
cut). It says which goals no threshold on that signal can reach with this encoder.
Signals: best cosine, gap between the two best cosines, the calibrated softmax p1
and p1 - p2. Embeddings are cached under $ROUTECORE_HOME/embeddings.
"""

from __future__ import annotations

import argparse

import numpy as np

from routecore import Encoder
from routecore.calibrate.calibration import background_vectors, route_scores, softmax, top2, zero_label
from routecore.evaluation.runner import embed
from zero_label import train_routes


def share_at(conf: np.ndarray, right: np.ndarray, precision: float) -> float:
    order = np.argsort(-conf, kind="stable")
    running = np.cumsum(right[order]) / np.arange(1, len(order) + 1)
    ok = np.flatnonzero(running >= precision)
    return float(ok.max() + 1) / len(order) if len(ok) else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--sets", default="xling-fr,xling-zh,massive-en,massive-fr,massive-zh")
    args = ap.parse_args()
    enc = Encoder.load(args.model)
    bg = background_vectors(enc)
    print("| set | raw top-1 | signal | share @ 90 % | share @ 95 % |\n|---|---|---|---|---|")
    for name in args.sets.split(","):
        test, pos, _, owners, V = train_routes(name, enc)
        cal = zero_label(V, owners, len(pos), bg)
        q = [s for s in test.samples if s.label in pos]
        S = route_scores(embed(enc, [s.text for s in test.samples], what=f"{name} test"), V, owners, len(pos))
        S = S[[s.label in pos for s in test.samples]]
        right = (S.argmax(1) == np.array([pos[s.label] for s in q])).astype(float)
        top = np.sort(S, 1)
        p1, margin, _ = top2(softmax(S, cal.temperature))
        for sig, conf in (
            ("best cosine", top[:, -1]),
            ("cosine gap", top[:, -1] - top[:, -2]),
            ("p1", p1),
            ("p1 - p2", margin),
        ):
            print(
                f"| {name} | {right.mean():.1%} | {sig} | {share_at(conf, right, 0.90):.1%} "
                f"| {share_at(conf, right, 0.95):.1%} |"
            )


if __name__ == "__main__":
    main()
