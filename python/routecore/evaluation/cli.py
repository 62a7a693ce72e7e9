"""`routecore eval` and `routecore fit` (registered by routecore.cli)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from routecore.evaluation.results import RouteEval, ToolEval


def _encoder(args: argparse.Namespace) -> Any:
    from routecore.core.encoder import Encoder

    return Encoder.load(args.model)


def cmd_eval(args: argparse.Namespace) -> int:
    from routecore.evaluation import datasets as D
    from routecore.evaluation import runner as R
    from routecore.evaluation.report import write_report
    from routecore.routers.router import Router

    progress = not args.json and not args.no_progress
    if args.log:
        return _eval_log(args)
    res: RouteEval | ToolEval
    if not args.data:
        raise SystemExit("routecore eval: give --data (a labelled JSONL) or --log (a decision log)")
    if args.tools or args.tools_in_rows or (args.bundle and D.is_tool_queries(args.data)):
        from routecore.evaluation import tool_eval as T

        data = D.load_tool_queries(args.data)
        if args.bundle and not (args.tools or args.tools_in_rows):  # a `fit --tools` bundle: its own catalog
            router, rows = Router.load(args.bundle), None
        elif args.tools and not str(args.tools).endswith(".jsonl"):
            router, rows = Router.from_config(args.tools, encoder=_encoder(args)), None
        else:
            catalog, rows = T.rows_catalog(data, D.load_tool_catalog(args.tools) if args.tools else None)
            router = T.tools_router(catalog, _encoder(args), progress)
        res = T.evaluate_tools(router, data, progress=progress, rows=rows)
    else:
        if args.bundle:
            router = Router.load(args.bundle)
        elif args.config:
            router = Router.from_config(args.config, encoder=_encoder(args))
        elif args.train:
            router = R.build_router(
                D.load_routes(args.train, oos_label=args.oos_label),
                _encoder(args),
                shots=args.shots,
                seed=args.seed,
                oos_label=args.oos_label,
                head=False if args.no_head else "exemplars",
                progress=progress,
            )
        else:
            raise SystemExit(
                "routecore eval: give --bundle, --config or --train (or --tools for tool selection)"
            )
        res = R.evaluate_routes(
            router,
            D.load_routes(args.data, oos_label=args.oos_label),
            oos_label=args.oos_label,
            progress=progress,
        )
    if args.out:
        write_report(res, args.out)
    out = res.to_dict()
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    else:
        keys = [
            "n",
            "accuracy",
            "in_scope_accuracy",
            "macro_f1",
            "oos",
            "decisions",
            "calibrated",
            "recall@5",
            "mrr",
            "latency_ms",
        ]
        for k in keys:
            if k in out:
                print(f"{k}: {out[k]}")
    return 0


def _eval_log(args: argparse.Namespace) -> int:
    """The report of a RoutingMetrics decision log (routecore.routers.routing_metrics)."""
    from routecore.routers.routing_metrics import RoutingMetrics

    res = RoutingMetrics.from_log(args.log).report()
    if args.json:
        print(json.dumps(res.to_dict(), ensure_ascii=False))
    else:
        out = res.to_dict()
        for k in ("records", "routes", "tools", "knowledge", "latency_by_route"):
            print(f"{k}: {out[k]}")
        rel = res.reliability
        print(f"reliability: n={rel.n} ece={out['reliability']['ece']}")
        for b in rel.bins:
            print(
                f"  confidence {b.lo:.1f}-{b.hi:.1f}: n={b.n} "
                f"mean {b.mean_confidence:.3f} "
                f"success {b.success_rate:.3f}"
            )
    return 0


def cmd_fit(args: argparse.Namespace) -> int:
    from routecore.evaluation import datasets as D
    from routecore.evaluation import runner as R

    progress = not args.json and not args.no_progress
    if args.tools:
        return _fit_tools(args, progress)
    if not args.train:
        raise SystemExit("routecore fit: give --train (routes) or --tools (a tool catalog)")
    head: bool | str = True if args.head else False if args.no_head else "exemplars"
    router = R.build_router(
        D.load_routes(args.train, oos_label=args.oos_label),
        _encoder(args),
        shots=args.shots,
        seed=args.seed,
        oos_label=args.oos_label,
        head=head,
        progress=progress,
    )
    res = R.fit_router(
        router,
        D.load_routes(args.val, oos_label=args.oos_label),
        objective=args.objective,
        coverage=args.coverage,
        oos_label=args.oos_label,
        progress=progress,
    )
    router.save(args.out)
    if args.json:
        print(json.dumps({"bundle": str(Path(args.out)), **res.to_dict()}))
    else:
        assert res.decisions is not None  # fit_router measures them
        d = res.decisions.figures
        acc = "n/a" if d.routed_accuracy is None else f"{d.routed_accuracy:.4f}"
        print(
            f"fitted ({res.objective} = {res.value:.4f} on validation); "
            "the router's decisions on validation: "
            f"routed {d.routed_share:.4f}, right among routed {acc} "
            f"(target {res.decisions.target_precision}), "
            f"confidently wrong {d.confident_wrong_rate:.4f}, clarify {d.clarify_rate:.4f}; "
            f"bundle written to {args.out}"
        )
    return 0


def _fit_tools(args: argparse.Namespace, progress: bool) -> int:
    from routecore.evaluation import datasets as D
    from routecore.evaluation import tool_eval as T
    from routecore.routers.router import Router

    enc = _encoder(args)
    val = D.load_tool_queries(args.val)
    if str(args.tools).endswith(".jsonl"):
        catalog, rows = T.rows_catalog(val, D.load_tool_catalog(args.tools))
        router = T.tools_router(catalog, enc, progress)
    else:
        router, rows = Router.from_config(args.tools, encoder=enc), None
    fitted = T.fit_tools(router, val, rows=rows, progress=progress)
    router.save(args.out)
    print(
        json.dumps({"bundle": str(Path(args.out)), **fitted.to_dict()})
        if args.json
        else f"fitted the tools' lexical weight {fitted.lexical_weight:.4f} "
        f"(stemmer {fitted.stemmer}, BM25 b {fitted.b}) on {fitted.val_rows} rows; "
        f"bundle written to {args.out}"
    )
    return 0


_P = TypeVar("_P", bound=argparse.ArgumentParser)


def add_eval_commands(sub: argparse._SubParsersAction[_P]) -> None:
    # Only a ``parents=`` source of arguments. typeshed types ``add_parser(parents=...)`` as the
    # subparsers' own class (``_P``, the CLI's JSON-error parser); any ArgumentParser works.
    common = cast(_P, argparse.ArgumentParser(add_help=False))
    common.add_argument("--model", help="model folder or name (default: the bundled multilingual-e5-small)")
    common.add_argument("--oos-label", default="oos", help="label of out-of-scope samples (default: oos)")
    common.add_argument("--shots", type=int, help="use a seeded sample of N exemplars per label")
    common.add_argument("--seed", type=int, default=0)
    common.add_argument(
        "--head",
        action="store_true",
        help="fit: a light linear head trained on the whole train split "
        "(its out-of-scope rows as a class) instead of "
        "the default exemplar head, both cut on --val",
    )
    common.add_argument(
        "--no-head",
        action="store_true",
        help="the cosine softmax (policy head: off) instead of the default exemplar head (eval --train, fit)",
    )
    common.add_argument("--json", action="store_true", help="print results as JSON")
    common.add_argument("--no-progress", action="store_true", help="no progress bar")

    e = sub.add_parser(
        "eval",
        parents=[common],
        help="evaluate a router on a labelled dataset",
        description="Evaluate routes ({text,label} JSONL) or tool selection "
        "({query,tools,candidates?} JSONL with --tools "
        "or --tools-in-rows; empty tools = no tool fits), or a production decision log (--log).",
    )
    e.add_argument("--data", help="labelled JSONL to evaluate on")
    e.add_argument(
        "--log",
        help="a decision log written by RoutingMetrics(log=...): report its decisions against their feedback",
    )
    e.add_argument("--bundle", help="router bundle (from `routecore fit` or Router.save)")
    e.add_argument("--config", help="routes YAML/JSON")
    e.add_argument("--train", help="build the routes from this {text,label} JSONL")
    e.add_argument(
        "--tools", help="tool catalog (JSONL with name/description, or YAML/JSON config): tool-selection mode"
    )
    e.add_argument(
        "--tools-in-rows",
        action="store_true",
        help="tool-selection mode with no catalog file: every row lists its own candidates "
        "({name, description})",
    )
    e.add_argument("--out", help="folder for results.json, report.md and PNG plots")
    e.set_defaults(func=cmd_eval)

    f = sub.add_parser(
        "fit",
        parents=[common],
        help="calibrate thresholds on a validation split",
        description="Build routes from --train, fit thresholds/temperature/tiers on --val, save a bundle.",
    )
    f.add_argument("--train", help="build the routes from this {text,label} JSONL")
    f.add_argument(
        "--tools",
        help="fit a tool catalog (JSONL or YAML/JSON config) instead: its lexical weight, stemmer "
        "and BM25 b, on --val {query,tools} rows",
    )
    f.add_argument("--val", required=True)
    f.add_argument(
        "--objective",
        choices=["accuracy", "macro_f1", "precision_at_coverage", "oos_f1", "oos_recall"],
        default="accuracy",
        help="oos_f1 / oos_recall: best out-of-scope F1 / recall keeping in-scope accuracy >= --coverage",
    )
    f.add_argument(
        "--coverage",
        type=float,
        default=0.9,
        help="target coverage (precision_at_coverage) or in-scope accuracy floor (oos_f1)",
    )
    f.add_argument("--out", required=True, help="bundle folder to write")
    f.set_defaults(func=cmd_fit)
