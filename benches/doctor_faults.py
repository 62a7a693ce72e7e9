"""``routecore doctor`` on few-shot configs with injected faults (issue 37 §3).

    ROUTECORE_HOME=/tmp/rchome python benches/doctor_faults.py [--model PATH] [--sets a,b]
        [--shots 10] [--seeds 1] [--limit 1000] [--json OUT]

For each dev set (CLINC150 val, BANKING77 the last fifth of train, MASSIVE en dev; the
``splits``/``pool``/``sample``/``build`` helpers of benches/few_shot.py, embeddings cached)
and seed: a clean config of ``--shots`` sampled train utterances per label, then a faulty
copy of it, where

- 10 % of the exemplars are moved to another route (uniformly at random), and
- the :data:`GENERIC` sentences (hand-written chit-chat, none of them in the bundled
  background set) are added, each to a different random route.

The doctor (:func:`routecore.doctor.doctor.diagnose`) reads the faulty config. Reported:

- ``found``: injected faults the doctor edits (drops or moves), by kind, and ``moved back``:
  moved exemplars it moves to their true route; ``precision``: edits that touch a fault;
- ``right``: in-scope queries of the split (at most ``--limit``, a fixed stratified
  sample) routed to the right route through ``Router.route_batch``, on the clean, the
  faulty and the fixed config (``apply_edits``: the doctor's drops and moves), and
  ``recovered``: (fixed - faulty) / (clean - faulty);
- ``clean_edits`` / ``right_clean_fixed``: the drops and moves the doctor asks of the clean config, and
  ``right`` once they are applied (what ``--fix`` does to a config with no injected fault).

Goals: found >= 80 %, recovered >= 80 %.
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
from few_shot import build, pool, sample, splits  # noqa: E402
from routecore import Encoder, TableVectors  # noqa: E402
from routecore.config.specs import RouteSpec, parse_config  # noqa: E402
from routecore.decide.policy import Policy  # noqa: E402
from routecore.doctor import apply_edits, diagnose  # noqa: E402
from routecore.evaluation.runner import embed, routes_from_split  # noqa: E402
from routecore.routers.router import Router  # noqa: E402

SETS = ("clinc150", "banking77", "massive-en")
#: Generic exemplars a config author might add: hand-written, none in the bundled background set.
GENERIC = (
    "hi there",
    "hello, can you help me",
    "I have a question",
    "can you help me with something",
    "I need some help please",
    "thanks a lot",
    "ok got it",
    "tell me more",
    "what can you do",
    "is anyone there",
    "I need assistance",
    "please help me",
    "can I ask you something",
    "that's all for now",
    "sorry, what did you say",
    "yes please",
    "no thanks",
    "good morning",
    "could you do something for me",
    "I want to know something",
    "help",
    "hey, quick question",
    "never mind",
    "let me think about it",
    "what do you mean",
    "can you repeat that",
    "I'm not sure",
    "one more thing",
    "could you check that for me",
    "I have a problem",
    "please answer my question",
    "how does this work",
    "I'd like some information",
    "start over",
    "what should I do",
    "can you explain",
    "thank you so much for your help",
    "are you still there",
    "that's not what I asked",
    "okay, and then what",
)
#: Share of exemplars moved to a wrong route.
MOVED = 0.10


def inject(
    routes: list[RouteSpec], seed: int
) -> tuple[list[RouteSpec], dict[tuple[str, str], tuple[str, str]]]:
    """The faulty copy of ``routes`` and its faults: (route, text) -> (kind, true route or "")."""
    rng = np.random.default_rng(1000 + seed)
    utts = {r.name: list(r.utterances) for r in routes}
    names = [r.name for r in routes]
    pairs = [(r.name, t) for r in routes for t in r.utterances]
    faults: dict[tuple[str, str], tuple[str, str]] = {}
    for j in rng.permutation(len(pairs))[: int(round(MOVED * len(pairs)))]:
        src, text = pairs[j]
        if len(utts[src]) <= 1:
            continue
        dst = names[rng.choice([i for i, n in enumerate(names) if n != src])]
        if text in utts[dst]:
            continue
        utts[src].remove(text)
        utts[dst].append(text)
        faults[(dst, text)] = ("moved", src)
    for text, i in zip(GENERIC, rng.permutation(len(names))):
        utts[names[i]].append(text)
        faults[(names[i], text)] = ("generic", "")
    return [RouteSpec(n, tuple(utts[n])) for n in names], faults


def router_of(enc: Any, routes: list[RouteSpec], vec: dict[str, np.ndarray]) -> tuple[Router, np.ndarray]:
    """A router over ``routes`` built as ``few_shot.build`` builds one, and its exemplars' vectors."""
    V = np.stack([vec[t] for r in routes for t in r.exemplars()])
    return Router(routes, encoder=enc, policy=Policy(), vectors=TableVectors(routes=V)), V


def right(router: Router, texts: list[str], gold: np.ndarray, X: np.ndarray) -> float:
    """In-scope queries routed to their route."""
    ds = router.route_batch(texts, vectors=X)
    ok = np.array([d.action == "route" and d.route == g for d, g in zip(ds, gold)])
    ins = gold != "oos"
    return float(ok[ins].mean())


def run_one(
    enc: Any, train: Any, vec: dict[str, np.ndarray], X: np.ndarray, test: Any, k: int, seed: int
) -> dict[str, Any]:
    texts, gold = [s.text for s in test.samples], np.array([s.label for s in test.samples], dtype=object)
    clean = routes_from_split(train, shots=k, seed=seed)
    faulty, faults = inject(clean, seed)
    r_faulty, V = router_of(enc, faulty, vec)
    t = time.perf_counter()
    rep = diagnose(r_faulty, vectors=V)
    doctor_s = time.perf_counter() - t
    edits = [e for e in rep.edits if e.action in ("drop", "move")]
    touched = {(e.route, e.text): e for e in edits}
    doc = {"routes": [{"name": r.name, "utterances": list(r.utterances)} for r in faulty]}
    fixed, _ = parse_config(apply_edits(doc, rep.edits), "fixed")
    # The doctor on the clean config too: what its fixes do to a config with no injected fault.
    r_clean, V_clean = router_of(enc, clean, vec)
    rep_clean = diagnose(r_clean, vectors=V_clean)
    clean_doc = {"routes": [{"name": r.name, "utterances": list(r.utterances)} for r in clean]}
    clean_fixed, _ = parse_config(apply_edits(clean_doc, rep_clean.edits), "clean fixed")
    acc = {
        "clean": right(build(enc, train, vec, k, seed), texts, gold, X),
        "faulty": right(r_faulty, texts, gold, X),
        "fixed": right(router_of(enc, fixed, vec)[0], texts, gold, X),
        "clean_fixed": right(router_of(enc, clean_fixed, vec)[0], texts, gold, X),
    }
    cost = acc["clean"] - acc["faulty"]
    by_kind = {kind: [key for key, (kd, _) in faults.items() if kd == kind] for kind in ("moved", "generic")}
    back = sum(
        touched[key].to == faults[key][1]
        for key in by_kind["moved"]
        if key in touched and touched[key].action == "move"
    )
    return {
        "faults": len(faults),
        "found": sum(key in touched for key in faults) / len(faults),
        "found_moved": sum(key in touched for key in by_kind["moved"]) / max(1, len(by_kind["moved"])),
        "found_generic": sum(key in touched for key in by_kind["generic"]) / max(1, len(by_kind["generic"])),
        "moved_back": back / max(1, len(by_kind["moved"])),
        "edits": len(edits),
        "clean_edits": sum(e.action in ("drop", "move") for e in rep_clean.edits),
        "precision": sum(key in faults for key in touched) / max(1, len(edits)),
        **{f"right_{k_}": v for k_, v in acc.items()},
        "recovered": (acc["fixed"] - acc["faulty"]) / cost if cost > 0 else float("nan"),
        "doctor_s": doctor_s,
        "exemplars": rep.exemplars,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model folder (default: the bundled default)")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--shots", type=int, default=10)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--limit", type=int, default=1000, help="evaluation queries per set (stratified sample)")
    ap.add_argument("--json", default=None, help="also write every run's figures here")
    a = ap.parse_args()
    enc = Encoder.load(a.model) if a.model else Encoder.load()
    print(
        f"# model {enc.model_id}, dev splits, k {a.shots}, seeds {a.seeds}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    cols = (
        "faults",
        "found",
        "found_moved",
        "found_generic",
        "moved_back",
        "edits",
        "precision",
        "right_clean",
        "right_faulty",
        "right_fixed",
        "recovered",
        "clean_edits",
        "right_clean_fixed",
        "doctor_s",
    )
    print("| set | seed | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 2) + "|")
    runs = []
    for name in a.sets.split(","):
        train, test = splits(name, "dev")
        train, test = pool(train), sample(test, a.limit)
        X = embed(enc, [s.text for s in test.samples], what=f"embedding {name}")
        tt = list(dict.fromkeys(s.text for s in train.samples))  # the texts (and cache) of few_shot.py
        vec = dict(zip(tt, embed(enc, tt, what=f"embedding {name} train")))
        vec.update(zip(GENERIC, embed(enc, list(GENERIC))))
        for seed in range(a.seeds):
            r = run_one(enc, train, vec, X, test, a.shots, seed)
            runs.append({"set": name, "seed": seed, **r})
            cells = [
                str(r[c])
                if c in ("faults", "edits", "clean_edits")
                else f"{r[c]:.2f}"
                if c in ("doctor_s", "recovered")
                else f"{100 * r[c]:.1f}"
                for c in cols
            ]
            print(f"| {name} | {seed} | " + " | ".join(cells) + " |", flush=True)
    for c in ("found", "recovered"):
        print(f"# mean {c}: {100 * float(np.nanmean([r[c] for r in runs])):.1f} % (goal >= 80 %)")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"model": enc.model_id, "shots": a.shots, "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
