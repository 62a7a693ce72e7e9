"""Few-shot decisions: what a user who writes k utterances per route gets (issue 34).

    ROUTECORE_HOME=/tmp/rchome python benches/few_shot.py [--model PATH] [--sets a,b] [--shots 5,10,20]
        [--seeds 5] [--split dev|test] [--limit 1500] [--json OUT] [--peer] [--route-precision [P]]
        [--describe] [--stemmer none|language] [--head exemplars|off] [--background all|own]

For each set, k and seed: a router built as a config builds it (``Router`` over k sampled
train utterances per label, zero-label, no ``fit``, no LLM), then every query of the dev
split (at most ``--limit``, a fixed stratified sample) through ``Router.route_batch`` on
cached embeddings. Reported per set and k, as mean over seeds (and the routed share's
spread, max - min):

- ``top1``: the router's best route is right (in-scope queries);
- ``routed``: share of in-scope queries routed; ``prec``: precision among routed
  (CLINC150's out-of-scope queries count as wrong when routed);
- ``right``: in-scope queries routed to the right route (end to end);
- ``hiwrong``: high-tier routes that are wrong, over all queries;
- ``clarify`` / ``none``: shares of in-scope queries; ``opts``: share of clarifications
  whose options hold the right route; ``oos-none``: CLINC150 out-of-scope queries declined
  (every out-of-scope query of the split: a 1,000-row sample holds about 32 of them);
- ``oracle@P``: the best ``right`` any threshold on the router's own confidence reaches at
  precision >= P (P = 0.95, or 0.90 on MASSIVE fr/zh); ``auroc``: "top-1 is right" against
  that confidence; ``build``: seconds to build the router, embeddings cached.

``--route-precision``: the routers of a set whose P is not the default policy's goal (MASSIVE
fr/zh) set ``policy.routes.route_precision`` to P, as a user who asks for that precision would
(the prior's levels measured for it); the other sets keep the default policy. ``--route-precision P``:
every router sets ``route_precision`` to P, and ``oracle`` is measured at P.

``--describe``: each route also gets a description, its label with "_" read as a space ("card
arrival"), as a user who describes the routes would (descriptions count as exemplars).

``--stemmer language``: the route tables' lexical pass stemmed in each set's language (the default
leaves them unstemmed); ``--head off``: the cosine softmax decides instead of the exemplar head.
``--background own``: the head's "none of these" class learns from the project's own background rows
only, without CLINC150's out-of-scope train queries (``background_rows.py``).
``--peer``: semantic-router 1.1.1 on the same encoder, exemplars and queries in the same run
(``few_shot_peer.py``: its default threshold, which routes every query, and 0.5); a second table
gives its routed share, precision and right beside routecore's.

Shots are drawn from a fixed pool of 60 train rows per label (so that only the pool is embedded).
Dev splits: CLINC150 val, MASSIVE dev, BANKING77 the last fifth of each label's train rows
(shots are drawn from the other four fifths). ``--split test`` reports the test splits once.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from typing import Any, Literal

import numpy as np

import background_rows
from routecore import Encoder, TableVectors
from routecore.decide.policy import Policy
from routecore.decide.policy_sections import Stemmer
from routecore.evaluation import datasets as D
from routecore.evaluation import metrics as M
from routecore.evaluation.runner import embed, routes_from_split
from routecore.routers.router import Router

SETS = {
    "clinc150": ("clinc150", None),
    "banking77": ("banking77", None),
    "massive-en": ("massive", "en-US"),
    "massive-fr": ("massive", "fr-FR"),
    "massive-zh": ("massive", "zh-CN"),
}
#: The route tables' stemmer per set: none (the default), or the stemmer of the set's language.
STEMMERS: dict[str, dict[str, Stemmer]] = {
    "none": dict.fromkeys(SETS, "none"),
    "language": {**dict.fromkeys(SETS, "english"), "massive-fr": "french", "massive-zh": "none"},
}
#: Precision target per set (MASSIVE fr/zh: 0.90, issue 34).
TARGET = {"massive-fr": 0.90, "massive-zh": 0.90}


def splits(name: str, split: str) -> tuple[D.Dataset, D.Dataset]:
    """(train, evaluation) of set ``name``: the dev split, or the test split."""
    kind, loc = SETS[name]
    if kind == "massive":
        return D.massive(loc, "train"), D.massive(loc, "dev" if split == "dev" else "test")
    if kind == "clinc150":
        return D.clinc150("train"), D.clinc150("val" if split == "dev" else "test")
    train = D.banking77("train")
    if split == "test":
        return train, D.banking77("test")
    by: dict[str, list[Any]] = defaultdict(list)
    for s in train.samples:
        by[s.label].append(s)
    keep, dev = [], []
    for rows in by.values():
        cut = len(rows) * 4 // 5
        keep += rows[:cut]
        dev += rows[cut:]
    return D.Dataset("banking77-train80", keep), D.Dataset("banking77-dev20", dev)


def pool(train: D.Dataset, per_label: int = 60, seed: int = 54321) -> D.Dataset:
    """At most ``per_label`` train rows of each label (a fixed random subset): the pool shots are
    drawn from."""
    rng = np.random.default_rng(seed)
    by: dict[str, list[Any]] = defaultdict(list)
    for s in train.samples:
        by[s.label].append(s)
    keep = []
    for rows in by.values():
        idx = np.sort(rng.permutation(len(rows))[:per_label])
        keep += [rows[i] for i in idx]
    return D.Dataset(train.name, keep)


def sample(test: D.Dataset, limit: int, seed: int = 12345) -> D.Dataset:
    """At most ``limit`` rows of ``test``, the same share of every label (fixed seed)."""
    if len(test) <= limit:
        return test
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.choice(len(test), limit, replace=False))
    return D.Dataset(test.name, [test.samples[i] for i in keep])


def set_up(
    enc: Any, name: str, split: str, limit: int
) -> tuple[D.Dataset, D.Dataset, D.Dataset, dict[str, Any]]:
    """A set as the few-shot benches read it: (the train pool, the whole evaluation split, its
    ``limit``-row sample, the pool's embeddings by text)."""
    train, full = splits(name, split)
    train, test = pool(train), sample(full, limit)
    texts = list(dict.fromkeys(s.text for s in train.samples))
    return train, full, test, dict(zip(texts, embed(enc, texts, what=f"embedding {name} train")))


def oracle(conf: np.ndarray, right: np.ndarray, n_in: int, P: float) -> float:
    """The most right routes (share of ``n_in``) a cut on ``conf`` gives at precision >= P."""
    order = np.argsort(-conf, kind="stable")
    prec = np.cumsum(right[order]) / np.arange(1, len(order) + 1)
    ok = np.flatnonzero(prec >= P)
    return float(np.cumsum(right[order])[ok[-1]] / n_in) if len(ok) else 0.0


def build(
    enc: Any,
    train: D.Dataset,
    vec: dict[str, np.ndarray],
    k: int,
    seed: int,
    goal: float | None = None,
    descriptions: dict[str, str] | None = None,
    stemmer: Stemmer = "none",
    head: Literal["off", "exemplars"] = "exemplars",
) -> Router:
    """The router a config of ``k`` sampled utterances per label gives (its exemplars' embeddings
    cached); ``goal``: the policy's ``route_precision``; ``descriptions``: each route's, by label;
    ``stemmer``: the route tables' lexical stemmer; ``head``: the policy's."""
    routes = routes_from_split(train, shots=k, seed=seed, descriptions=descriptions)
    V = np.stack([vec[t] for r in routes for t in r.exemplars()])
    policy = Policy(route_precision=goal, lexical_stemmer=stemmer, head=head)
    return Router(routes, encoder=enc, policy=policy, vectors=TableVectors(routes=V))


def run_one(
    enc: Any,
    train: D.Dataset,
    vec: dict[str, np.ndarray],
    X: np.ndarray,
    test: D.Dataset,
    k: int,
    seed: int,
    P: float,
    oos_extra: tuple[list[str], np.ndarray] = ([], np.zeros((0, 0), np.float32)),
    peer: Any = None,
    goal: float | None = None,
    descriptions: dict[str, str] | None = None,
    stemmer: Stemmer = "none",
    head: Literal["off", "exemplars"] = "exemplars",
) -> dict[str, float]:
    t = time.perf_counter()
    router = build(enc, train, vec, k, seed, goal, descriptions, stemmer, head)
    build_s = time.perf_counter() - t
    texts, gold = [s.text for s in test.samples], np.array([s.label for s in test.samples], dtype=object)
    if peer is not None:
        from few_shot_peer import peer_figures

        peer_out = peer_figures(peer, routes_from_split(train, shots=k, seed=seed), texts, gold)
    decs = router.route_batch(texts, vectors=X)
    extra = router.route_batch(oos_extra[0], vectors=oos_extra[1]) if oos_extra[0] else []
    out = {**figures(decs, gold, P, extra), "build": build_s}
    return {**out, **peer_out} if peer is not None else out


#: The bench's columns, in print order.
COLS = (
    "top1",
    "routed",
    "prec",
    "right",
    "hiwrong",
    "clarify",
    "none",
    "opts",
    "oos_none",
    "oracle",
    "auroc",
)


def figures(decs: list[Any], gold: np.ndarray, P: float, extra_oos: list[Any]) -> dict[str, Any]:
    """The bench's columns for decisions ``decs`` on queries of labels ``gold`` (``oos``: out of
    scope), at precision goal ``P``; ``extra_oos``: decisions on more out-of-scope queries."""
    ins = gold != "oos"
    act = np.array([d.action for d in decs], dtype=object)
    route = np.array([d.route for d in decs], dtype=object)
    best = np.array([max(d.probabilities, key=d.probabilities.__getitem__) for d in decs], dtype=object)
    conf = np.array([d.confidence for d in decs])
    routed, top1 = act == "route", best == gold
    right = routed & (route == gold)
    clar = act == "clarify"
    opts = [g in d.candidates for d, g, c in zip(decs, gold, clar) if c and g != "oos"]
    hi_wrong = routed & (np.array([d.tier for d in decs]) == "high") & (route != gold)
    n_in = int(ins.sum())
    out: dict[str, Any] = {
        "top1": float(top1[ins].mean()),
        "routed": float(routed[ins].mean()),
        "prec": float(right[routed].mean()) if routed.any() else float("nan"),
        "right": float(right[ins].mean()),
        "hiwrong": float(hi_wrong.mean()),
        "clarify": float(clar[ins].mean()),
        "none": float((act == "none")[ins].mean()),
        "opts": float(np.mean(opts)) if opts else float("nan"),
        "oracle": oracle(conf, top1 & ins, n_in, P),
        "auroc": float(M.auroc(conf[ins & top1].tolist(), conf[ins & ~top1].tolist()) or float("nan")),
    }
    if (~ins).any() or extra_oos:
        out["oos_none"] = float(
            np.mean((act == "none")[~ins].tolist() + [d.action == "none" for d in extra_oos])
        )
    reasons: dict[str, int] = defaultdict(int)
    for d in decs:
        code = getattr(getattr(d, "reason", None), "code", None)
        if code:
            reasons[code] += 1
    out["reasons"] = dict(reasons)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model folder (default: the bundled default)")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--shots", default="5,10,20")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--limit", type=int, default=1500, help="evaluation queries per set (stratified sample)")
    ap.add_argument("--json", default=None, help="also write every run's figures here")
    ap.add_argument("--pool", type=int, default=60, help="train rows per label shots are drawn from (0: all)")
    ap.add_argument("--peer", action="store_true", help="semantic-router on the same data (few_shot_peer.py)")
    ap.add_argument(
        "--route-precision",
        nargs="?",
        const="goals",
        default=None,
        help="route_precision: alone, each set's goal on MASSIVE fr/zh; a number, that goal everywhere",
    )
    ap.add_argument(
        "--describe", action="store_true", help="each route's description: its label, '_' read as a space"
    )
    ap.add_argument(
        "--stemmer",
        choices=tuple(STEMMERS),
        default="none",
        help="the route tables' lexical stemmer: none (the default), or the set's language's",
    )
    ap.add_argument(
        "--head",
        choices=("exemplars", "off"),
        default="exemplars",
        help="the policy's head (off: cosine softmax)",
    )
    ap.add_argument("--background", default="all", choices=background_rows.CHOICES)
    a = ap.parse_args()
    background_rows.use(a.background)
    enc = Encoder.load(a.model) if a.model else Encoder.load()
    print(
        f"# model {enc.model_id}, split {a.split}, seeds {a.seeds}, describe {a.describe}, "
        f"route_precision {a.route_precision or 'unset'}, stemmer {a.stemmer}, head {a.head}, "
        f"background {a.background}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    cols = COLS
    print("| set | k | " + " | ".join(cols) + " | routed spread | build s |")
    print("|---" * (len(cols) + 4) + "|")
    runs = []
    peer_rows: list[str] = []
    every = a.route_precision not in (None, "goals")  # one goal for every set
    for name in a.sets.split(","):
        train, test = splits(name, a.split)
        full, train, test = test, (pool(train, a.pool) if a.pool else train), sample(test, a.limit)
        X = embed(enc, [s.text for s in test.samples], what=f"embedding {name}")
        kept = {id(s) for s in test.samples}
        oos_texts = [s.text for s in full.samples if s.label == "oos" and id(s) not in kept]
        oos_extra = (oos_texts, embed(enc, oos_texts) if oos_texts else np.zeros((0, enc.dim), np.float32))
        tt = list(dict.fromkeys(s.text for s in train.samples))
        vec = dict(zip(tt, embed(enc, tt, what=f"embedding {name} train")))
        descs = None
        if a.describe:
            descs = {s.label: s.label.replace("_", " ") for s in train.samples if s.label != "oos"}
            vec.update(zip(descs.values(), embed(enc, list(descs.values()))))
        P = float(a.route_precision) if every else TARGET.get(name, 0.95)
        peer = None
        if a.peer:
            from few_shot_peer import peer_encoder

            peer = peer_encoder(
                enc, tt + [s.text for s in test.samples], np.concatenate([np.stack([vec[t] for t in tt]), X])
            )
        for k in (int(x) for x in a.shots.split(",")):
            goal = P if every or (a.route_precision and name in TARGET) else None
            rs = [
                run_one(
                    enc,
                    train,
                    vec,
                    X,
                    test,
                    k,
                    seed,
                    P,
                    oos_extra,
                    peer,
                    goal,
                    descs,
                    STEMMERS[a.stemmer][name],
                    a.head,
                )
                for seed in range(a.seeds)
            ]
            runs += [{"set": name, "k": k, "seed": s, **r} for s, r in enumerate(rs)]
            mean = {
                c: float(np.nanmean([r[c] for r in rs])) if all(c in r for r in rs) else float("nan")
                for c in cols
            }
            spread = max(r["routed"] for r in rs) - min(r["routed"] for r in rs)
            cells = [f"{mean[c]:.3f}" if c == "auroc" else f"{100 * mean[c]:.1f}" for c in cols]
            print(
                f"| {name} | {k} | "
                + " | ".join(cells)
                + f" | {100 * spread:.1f} | {np.mean([r['build'] for r in rs]):.2f} |",
                flush=True,
            )
            if a.peer:
                peer_rows.append(
                    f"| {name} | {k} | "
                    + " | ".join(
                        f"{100 * np.nanmean([r[f'{v}_{c}'] for r in rs]):.1f}"
                        for v in ("sr", "sr@0.5")
                        for c in ("routed", "prec", "right")
                    )
                    + "".join(f" | {100 * mean[c]:.1f}" for c in ("routed", "prec", "right"))
                    + " |"
                )
    if peer_rows:
        print(
            "\n| set | k | sr routed | sr prec | sr right | sr@0.5 routed | sr@0.5 prec | sr@0.5 right "
            "| routecore routed | prec | right |"
        )
        print("|---" * 11 + "|")
        print("\n".join(peer_rows), flush=True)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"model": enc.model_id, "split": a.split, "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
