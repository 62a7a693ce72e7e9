"""What a second reading of a query costs: ``route()`` with the encoder in the loop, per kind of query.

    ROUTECORE_HOME=/tmp/rchome python benches/reading_cost.py [--set banking77] [--shots 10] [--n 200]

A router of ``--shots`` train utterances per label (``few_shot.build``, seed 0) and ``--n`` dev
queries of the set, each timed through ``Router.route`` (its encoder cache off, so that every call
encodes), one at a time, in four kinds:

- ``clean``: the query as written (one reading);
- ``typos``: typos on 10 % of its letters (``evaluation.perturb``, seed 0): a repaired query is read
  as typed too (a second encode) when the speller changed a word;
- ``previous``: the query with ``previous_query`` set to another query of its label: a query that
  alone is not routed is read after that text too (a second encode);
- ``fragment``: its last two words after the whole query as ``previous_query`` (a follow-up).

Reported per kind: p50 / p95 ms of the call, the share of calls that read the query twice (a repair,
read as typed too, or a follow-up reading tried), and the routed share.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np

import few_shot as F
from routecore import Encoder
from routecore.evaluation.perturb import PERTURBATIONS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="banking77")
    ap.add_argument("--shots", type=int, default=10)
    ap.add_argument("--n", type=int, default=200)
    a = ap.parse_args()
    enc = Encoder.load(cache_size=0)
    train, _, test, vec = F.set_up(enc, a.set, "dev", a.n)
    router = F.build(enc, train, vec, a.shots, 0)
    rows = [s for s in test.samples if s.label != "oos"][: a.n]
    by = defaultdict(list)
    for s in rows:
        by[s.label].append(s.text)
    other = {s.text: next((t for t in by[s.label] if t != s.text), s.text) for s in rows}
    kinds = {
        "clean": [(s.text, None) for s in rows],
        "typos": [(PERTURBATIONS["typos"](s.text, 0), None) for s in rows],
        "previous": [(s.text, other[s.text]) for s in rows],
        "fragment": [(" ".join(s.text.split()[-2:]), s.text) for s in rows],
    }
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"# {enc.model_id}, {a.set} dev, {len(rows)} queries, k = {a.shots}, encoder cache off, {when}")
    print("| kind | p50 ms | p95 ms | read twice | routed |")
    print("|---|---|---|---|---|")
    router.route("warm up")
    for kind, calls in kinds.items():
        ms, twice, routed = [], 0, 0
        for q, before in calls:
            t = time.perf_counter()
            d = router.route(q, previous_query=before)
            ms.append((time.perf_counter() - t) * 1e3)
            seen = {al.kind for al in d.alerts}  # a repair was read as typed too; a follow-up tried
            twice += "spelling" in seen or (
                before is not None and (d.action != "route" or "follow_up" in seen)
            )
            routed += d.action == "route"
        p50, p95 = np.percentile(ms, [50, 95])
        n = len(calls)
        print(
            f"| {kind} | {p50:.2f} | {p95:.2f} | {100 * twice / n:.1f} % | {100 * routed / n:.1f} % |",
            flush=True,
        )


if __name__ == "__main__":
    main()
