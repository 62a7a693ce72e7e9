"""How a query's scores change when it is written in another language than the routes (issue 12).

    ROUTECORE_HOME=/tmp/rchome python benches/language_transfer.py [--model PATH] [--split dev]

Routes from MASSIVE en-US train. The truth: MASSIVE's fr-FR and zh-CN rows are
translations of the en-US rows with the same id, so each pair is scored against the
routes in both languages. Two estimates that need no such data:
- ``background``: the bundled background set's sentences of each language, unrelated to
  any route (the first estimate tried: the shift of their median best score, the ratio
  of their median best-to-tenth spread);
- ``parallel set``: the bundled parallel set (routecore.calibrate.languages.transfer: slope and
  noise of the centred scores, shift of the best score), what the calibration uses.
Printed per language: the shift of the best score, the best-to-tenth spread ratio, the
slope and noise of the centred scores.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from routecore import Encoder
from routecore.calibrate.held_out import route_scores
from routecore.calibrate.languages import pairs, transfer
from routecore.core.background import (
    background_languages,
    background_vectors,
    parallel_rows,
    parallel_vectors,
)
from routecore.evaluation import datasets as D
from routecore.evaluation.runner import embed


def spread(S: np.ndarray) -> np.ndarray:
    top = -np.sort(-S, axis=1)
    return top[:, 0] - top[:, 9]


def figures(SE: np.ndarray, SL: np.ndarray) -> dict[str, float]:
    slope, noise, shift = transfer(SE, SL)
    return {
        "shift": round(shift, 4),
        "spread_ratio": round(float(np.median(spread(SL)) / np.median(spread(SE))), 3),
        "slope": round(slope, 3),
        "noise": round(noise, 4),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    a = ap.parse_args()
    enc = Encoder.load(a.model) if a.model else Encoder.load()
    train = D.massive("en-US", "train")
    names = sorted({s.label for s in train.samples})
    idx = {n: i for i, n in enumerate(names)}
    V = embed(enc, [s.text for s in train.samples])
    own = np.array([idx[s.label] for s in train.samples])

    def scores(X: np.ndarray) -> np.ndarray:
        return route_scores(X, V, own, len(names))

    def rows(loc: str) -> list[dict]:
        return [r for _, r in D.read_jsonl(D.shared_root() / "massive" / loc / f"{a.split}.jsonl")]

    en = {r["id"]: r["text"] for r in rows("en-US")}
    B, blang = background_vectors(enc), np.array(background_languages())
    SB = scores(B)
    P, prows = parallel_vectors(enc), parallel_rows()
    SP = scores(P)
    print(json.dumps({"model": enc.model_id, "split": a.split, "routes": len(names)}))
    for loc, lang in (("fr-FR", "fr"), ("zh-CN", "zh")):
        both = [r for r in rows(loc) if r["id"] in en]
        out: dict[str, object] = {"language": lang, "pairs": len(both)}
        SE = scores(embed(enc, [en[r["id"]] for r in both]))
        SL = scores(embed(enc, [r["text"] for r in both]))
        out["massive_truth"] = figures(SE, SL)
        home, other = SB[blang == "en"], SB[blang == lang]
        out["background"] = {
            "shift": round(float(np.median(other.max(axis=1)) - np.median(home.max(axis=1))), 4),
            "spread_ratio": round(float(np.median(spread(other)) / np.median(spread(home))), 3),
        }
        hi, li = pairs(prows, ["en"], lang)
        out["parallel_set"] = figures(SP[hi], SP[li])
        print(json.dumps(out))


if __name__ == "__main__":
    main()
