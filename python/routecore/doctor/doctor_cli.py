"""``routecore doctor CONFIG [--data LABELLED.jsonl] [--log DECISIONS.jsonl] [--json] [--fix OUT]``
(registered by routecore.cli; the diagnosis itself is :mod:`routecore.doctor.doctor`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the doctor loads with its command, not with every CLI call
    from routecore.doctor.doctor import DoctorReport


#: Lines printed per finding (``--json`` lists every one).
SHOWN = 10


def _more(items: Any, shown: int = SHOWN) -> list[str]:
    return [f"  ... {len(items) - shown} more (--json lists them all)"] if len(items) > shown else []


def render(r: DoctorReport) -> str:
    """The human report: each finding with its numbers and examples, then the suggested edits."""
    c, k = r.calibration, r.cuts
    out = [
        f"routecore doctor: {r.config} ({r.routes} routes, {r.exemplars} exemplars, model {r.model})",
        f"calibration: {c.source} ({c.held_out} held-out exemplars): temperature T {c.temperature:.4f}, "
        f"paraphrase {c.match:.3f}, unrelated {c.unrelated:.3f}, "
        + (
            f"out-of-scope cut {c.min_score:.3f}"
            if c.min_score > 0
            else "out of scope decided by the exemplar head"
        ),
        f"cuts: misfit when another route is nearer by {k.misfit_gap:.4f} "
        f"({k.misfit_gap / k.temperature:.1f} T); near-duplicate from cosine {k.duplicate:.3f}",
    ]
    if c.note:
        out.append(f"  {c.note}")
    for kind, title in (
        ("misplaced", "misplaced exemplars (nearer another route, which would take them)"),
        ("generic", "generic exemplars (near several routes, or the background set)"),
    ):
        ms = [m for m in r.misfits if m.kind == kind]
        out.append(f"\n{title}: {len(ms)}")
        for m in sorted(ms, key=lambda m: -m.gap)[:SHOWN]:
            e = m.exemplar
            where = f"-> {m.to}" if m.to else "near " + ", ".join(m.near_routes)
            out.append(
                f"  {e.route}: {e.text!r}  own {m.own_score:.3f}, {m.nearest_route} {m.nearest_score:.3f} "
                f"({m.gap:+.1f} T), background {m.background:.3f}  {where}"
            )
        out += _more(ms)
    out.append(f"\nnear-duplicates: {len(r.duplicates)}")
    for d in r.duplicates[:SHOWN]:
        out.append(f"  {d.drop.route}: {d.drop.text!r} repeats {d.keep.text!r} (cosine {d.cosine:.3f})")
    out += _more(r.duplicates)
    out.append(f"\nconfused route pairs: {len(r.confused_pairs)}")
    for p in r.confused_pairs[:SHOWN]:
        out.append(
            f"  {p.a} <-> {p.b}: {p.a_to_b} + {p.b_to_a} exemplars nearer the other route "
            f"({100 * p.share:.0f} % of both), centroid cosine {p.centroid_cosine:.3f}"
        )
        for x in p.examples:
            out.append(f"    {x.route}: {x.text!r}  own {x.own_score:.3f}, other {x.other_score:.3f}")
    out += _more(r.confused_pairs)
    out.append(
        f"\nthin routes (< {r.thin_routes[0].wanted if r.thin_routes else 5} exemplars): {len(r.thin_routes)}"
    )
    out += [f"  {t.route}: {t.exemplars}" for t in r.thin_routes[:SHOWN]] + _more(r.thin_routes)
    if r.data is not None:
        d = r.data
        acc = "n/a" if d.accuracy is None else f"{100 * d.accuracy:.1f} %"
        out.append(
            f"\nlabelled data {d.path}: {d.rows} rows, {d.in_scope} in scope routed right {acc}"
            + (
                f"; {d.out_of_scope} out of scope, declined {100 * (d.declined or 0):.1f} %"
                if d.out_of_scope
                else ""
            )
        )
        for a in d.routes[:SHOWN]:
            sent = ", ".join(f"{n} x{c}" for n, c in a.sent_to)
            out.append(
                f"  {a.route}: {a.right}/{a.n} right ({100 * a.accuracy:.0f} %), "
                f"clarify {a.clarify}, none {a.none}"
                + (f", sent to {sent}" if sent else "")
                + (f"; e.g. {a.misses[0]!r}" if a.misses else "")
            )
        out += _more(d.routes)
    if r.log is not None:
        g = r.log
        out.append(
            f"\ndecision log {g.path}: {g.decisions} decisions ({g.with_feedback} with feedback), "
            f"{g.fell_out} fell out of a route"
            + (f", {g.unattributed} unattributed" if g.unattributed else "")
        )
        for f in g.routes[:SHOWN]:
            acts = ", ".join(f"{a} {n}" for a, n in f.actions)
            out.append(
                f"  {f.route}: {f.fell} fell out, {f.kept} kept ({100 * f.share:.0f} % fell: {acts})"
                + (f"; e.g. {f.examples[0]!r}" if f.examples else "")
            )
        out += _more(g.routes)
    out.append(
        f"\nsuggestions: {len(r.suggestions)} (--fix OUT writes the config with the drops and moves applied)"
    )
    out += [f"  {s}" for s in r.suggestions[: 3 * SHOWN]] + _more(r.suggestions, 3 * SHOWN)
    return "\n".join(out)


def cmd_doctor(args: argparse.Namespace) -> int:
    from routecore.config.specs import parse_config, read_config_file, read_text
    from routecore.core.encoder import Encoder
    from routecore.doctor.doctor import apply_edits, diagnose, edited_text, write_config

    doc = read_config_file(args.config)  # a missing file, or not a config: ConfigError before any model loads
    enc = Encoder.load(args.model) if args.model else Encoder.load()
    report = diagnose(args.config, args.data, args.log, encoder=enc)
    fix = None
    if args.fix:
        fixed = apply_edits(doc, report.edits)
        parse_config(fixed, f"{args.fix} (the fixed config)")
        source = read_text(Path(args.config)) if Path(args.config).suffix in (".yaml", ".yml") else None
        kept = edited_text(source, report.edits, fixed) if source is not None else None
        write_config(fixed, args.fix, text=kept)  # the source's comments and layout, where its lines allow
        applied = [e for e in report.edits if e.action in ("drop", "move")]
        fix = {
            "path": str(Path(args.fix)),
            "drops": sum(e.action == "drop" for e in applied),
            "moves": sum(e.action == "move" for e in applied),
        }
    if args.json:
        print(json.dumps({**report.to_dict(), "fix": fix}, indent=2, ensure_ascii=False))
    else:
        print(render(report))
        if fix:
            print(f"\nwrote {fix['path']}: {fix['drops']} exemplars dropped, {fix['moves']} moved")
    return 0


def add_doctor_command(sub: Any) -> None:
    d = sub.add_parser(
        "doctor",
        help="diagnose a route config: confused routes, generic, misplaced and duplicate exemplars",
        description="Report what is wrong with a route config, with examples and numbers on the encoder's "
        "own scale, and suggest edits; --fix writes a cleaned copy.",
    )
    d.add_argument("config", help="routes YAML/JSON")
    d.add_argument("--data", help="labelled JSONL ({text, label}): per-route accuracy and confusions")
    d.add_argument(
        "--log", help="a decision log written by RoutingMetrics(log=...): the routes queries fall out of"
    )
    d.add_argument("--model", help="model folder or name (default: the bundled multilingual-e5-small)")
    d.add_argument(
        "--fix", metavar="OUT", help="write the config with the suggested drops and moves applied (YAML)"
    )
    d.add_argument("--json", action="store_true", help="print the report as JSON")
    d.set_defaults(func=cmd_doctor)
