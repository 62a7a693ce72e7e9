"""Measure the decision prior of two encoders' combined probabilities and write it into
python/routecore/data/priors.json (routecore.calibrate.peer_cut).

    ROUTECORE_HOME=/tmp/rchome python scripts/fit_decision_prior.py dump --out A.npy
    ROUTECORE_HOME=/tmp/rchome python scripts/fit_decision_prior.py dump \\
        --model ../shared/models/all-minilm-l6-v2 --out B.npy
    python scripts/fit_pair_prior.py A.npy B.npy [--write]

Both dumps hold the same configs (dev splits, seeded routes and shots) and queries. For every config
both have, each query's probabilities become the normalised geometric mean of the two heads' (what
``Router.route(peer=...)`` decides on); the scope stays the first model's. The prior is fitted as
``fit_decision_prior.py fit`` fits one (levels, traffic, scope, targets), reported with its
leave-one-dataset-out check, and written under ``pair_key(first model, second model)``. The traffic
level must also hold in a cascade with the second model's router in front (its high-tier decisions,
by its own shipped prior, served and read by the pair's traffic cut): the higher of the two is kept.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fit_decision_prior as F  # noqa: E402


def combined(own: dict, peer: dict) -> dict[str, dict[str, np.ndarray]]:
    """The configs of both dumps the prior is fitted on (``fit_decision_prior.FITTED`` utterances a
    route), each query's probabilities combined (``own`` kept beside them)."""
    rows = {}
    for key, v in peer["rows"].items():
        mine = own["rows"].get(key)
        if mine is None or int(key.split("|")[2]) not in F.FITTED:
            continue
        if not np.array_equal(mine["gold"], v["gold"]) or mine["P"].shape != v["P"].shape:
            raise SystemExit(f"{key}: the dumps hold different queries or routes")
        both = np.sqrt(mine["P"].astype(np.float64) * v["P"].astype(np.float64))
        both /= np.maximum(both.sum(axis=1, keepdims=True), 1e-30)
        rows[key] = {**mine, "P": both.astype(np.float32), "own": mine["P"]}
    return rows


def _fast_served(m: dict[str, np.ndarray], fast: dict) -> np.ndarray:
    """The queries the peer's router routes at its high tier (a cascade's fast router serves them),
    under its own shipped prior ``fast``."""
    cut = F.cut_of(fast["weights"], fast["high"], m["config"], fast["span"])
    return ~m["none"] & (m["raw1"] >= fast["scope"]) & (m["p1"] >= cut)


def _cascade(r: dict, m: dict, prior: dict, fast: dict, level: float) -> tuple[float, float]:
    """(precision among routed, in-scope share routed right) of one run through a cascade whose
    strong router decides on the combined probabilities and whose pair traffic cut reads the
    escalated queries' combined best probability and the fast router's for those it served
    (``RouteTable.peer_served``)."""
    w, span, scope = prior["weights"], prior["span"], float(prior["scope"])
    served = _fast_served(m, fast)
    ok = ~r["none"] & (r["raw1"] >= scope)
    seen = np.concatenate([r["p1"][ok & ~served], m["p1"][served]])
    cut = min(F.cut_of(w, prior["medium"], r["config"], span), F.traffic_cut(r, w, span, scope, level, seen))
    routed = served | (~served & ok & (r["p1"] >= cut))
    right = np.where(served, m["right"], r["right"])
    ins = r["ins"]
    return float(right[routed].mean()) if routed.any() else 1.0, float((routed & right & ins)[ins].mean())


def cascade_level(groups: dict, fast_groups: dict, prior: dict, fast: dict) -> float:
    """The lowest traffic level at which every group meets its goal through the cascade
    (:func:`_cascade`); 0.0 when none does."""
    for level in np.round(np.arange(0.95, 0.996, 0.005), 3):
        if all(
            np.mean([_cascade(r, m, prior, fast, float(level))[0] for r, m in zip(runs, fast_groups[key])])
            >= F.TARGET.get(key.split("|")[0], 0.95)
            for key, runs in groups.items()
        ):
            return float(level)
    return 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("own", help="the deciding model's dump")
    ap.add_argument("peer", help="the peer model's dump")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    from routecore.calibrate.prior import pair_key

    own, peer = (np.load(p, allow_pickle=True).item() for p in (a.own, a.peer))
    rows = combined(own, peer)
    groups = F.run_groups(rows)
    prior = F.choose(groups)
    key = pair_key(own["model_id"], peer["model_id"])
    fast = json.loads(F.PRIORS.read_text())["models"].get(peer["model_id"])
    if fast is not None:  # the level must also hold in a cascade with the peer in front
        level = cascade_level(groups, F.run_groups({k: peer["rows"][k] for k in rows}), prior, fast)
        print(f"traffic level: {prior['traffic']} on every query's combined probability, {level} in cascades")
        prior["traffic"] = max(float(prior["traffic"]), level) if level and prior["traffic"] else 0.0
    sets = F.print_fit(key, groups, prior)
    if a.write:
        table = json.loads(F.PRIORS.read_text())
        table["models"][key] = {
            **prior,
            "languages": sorted({s.split("-")[1] if s.startswith("massive-") else "en" for s in sets}),
            "source": f"dev splits of {', '.join(sets)}, both heads' normalised geometric mean; "
            "k = 5, 10, 20; scripts/fit_pair_prior.py",
        }
        F.PRIORS.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {F.PRIORS}")


if __name__ == "__main__":
    main()
