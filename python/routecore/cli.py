"""Command line: ``routecore route|tools|eval|fit|models|schema|import|serve|doctor``; every command
has ``--json``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence

from routecore.examples import IT_OPS_ROUTES as DEFAULT_ROUTES
from routecore.examples import TOOLS as DEFAULT_TOOLS

#: Routes ``routecore route`` prints (``--all`` prints every one).
TOP_SHOWN = 5


class _Parser(argparse.ArgumentParser):
    """Usage errors as a JSON object on stdout when ``--json`` is on the command line."""

    def error(self, message: str) -> NoReturn:
        if "--json" in sys.argv[1:]:
            print(json.dumps({"error": {"type": "UsageError", "message": message}}))
            raise SystemExit(2)
        super().error(message)


def _router(args: argparse.Namespace, default: Path) -> Any:
    static, fast = getattr(args, "static", False), getattr(args, "fast_model", None)
    if static or fast:
        from routecore.serve.fast_tier import check_fast_args, fast_encoder_name

        check_fast_args(static, fast, getattr(args, "bundle", None))
        # the name is checked before anything loads
        return _fast_tier(args, default, fast_encoder_name(getattr(args, "model", None), static, fast))
    if getattr(args, "bundle", None):
        from routecore.llm.llm import llm_from_config
        from routecore.routers.router import Router

        url, model = getattr(args, "llm_url", None), getattr(args, "llm_model", None)
        return Router.load(args.bundle, llm=llm_from_config(None, "command line", base_url=url, model=model))
    from concurrent.futures import ThreadPoolExecutor

    # The model loads (native, the GIL let go) while this thread imports numpy and the router and
    # reads the config: on a warm call those then cost no wall time of their own. Nothing heavy is
    # imported before this point (``import routecore`` is the native module and the errors).
    with ThreadPoolExecutor(1, thread_name_prefix="routecore-load") as pool:
        loading = pool.submit(_load_encoder, getattr(args, "model", None))
        return _configured_router(args, default, loading.result)


def _fast_tier(args: argparse.Namespace, default: Path, fast_model: str) -> Any:
    """``--fast-model`` / ``--static``: the config's router on ``fast_model`` in front of its router on
    ``--model`` (routecore.serve.fast_tier.FastTier, as ``serve`` serves it); both models load at once."""
    from concurrent.futures import ThreadPoolExecutor

    from routecore.serve.fast_tier import fast_tier

    with ThreadPoolExecutor(2, thread_name_prefix="routecore-load") as pool:
        strong_enc = pool.submit(_load_encoder, getattr(args, "model", None))
        fast_enc = pool.submit(_load_encoder, fast_model)
        strong = _configured_router(args, default, strong_enc.result)
        return fast_tier(_configured_router(args, default, fast_enc.result), strong)


def _load_encoder(model: str | None) -> Any:
    from routecore.core.encoder import Encoder

    return Encoder.load(*([model] if model else []))


def _configured_router(args: argparse.Namespace, default: Path, encoder: Callable[[], Any]) -> Any:
    """``_router`` of a config while the model loads: ``encoder()`` waits for it."""
    from routecore.config.specs import parse_config, read_config_file
    from routecore.llm.llm import llm_from_config
    from routecore.routers.router import Router

    url, model = getattr(args, "llm_url", None), getattr(args, "llm_model", None)
    # A large config takes minutes to embed: say so on a terminal, never in JSON or pipes.
    progress = not args.json and sys.stderr.isatty()
    path = args.config or default
    data = (
        read_config_file(path)
        if args.config or not getattr(args, "mcp_stdio", None) and not getattr(args, "mcp_url", None)
        else {}
    )
    llm = llm_from_config(data.get("llm"), str(path), base_url=url, model=model)
    overlay = getattr(args, "overlay", None)
    servers = (getattr(args, "mcp_stdio", None) or []) + (getattr(args, "mcp_url", None) or [])
    if (
        servers
    ):  # the MCP servers' tools (listed live, so never cached), plus those of --config when it is given
        from routecore.config.mcp_tools import list_mcp_tools, mcp_tool_specs
        from routecore.decide.policy import Policy

        tools = mcp_tool_specs(list_mcp_tools(servers), overlay=overlay)
        routes, extra = parse_config(data, str(path)) if data else ([], [])
        policy = Policy.from_dict(data.get("policy"), f"{path}: policy")
        return Router(routes, tools + extra, encoder=encoder(), progress=progress, policy=policy, llm=llm)

    from routecore.routers import config_cache

    enc = encoder()

    def build() -> Any:
        return Router.from_config(
            path, encoder=enc, progress=progress, llm=llm, **({"tool_overlay": overlay} if overlay else {})
        )

    if getattr(args, "no_cache", False) or not config_cache.enabled():
        return build()
    return config_cache.cached_router([Path(path), Path(overlay) if overlay else None], enc, build, llm=llm)


def cmd_route(args: argparse.Namespace) -> int:
    router = _router(args, DEFAULT_ROUTES)
    kw = dict(previous=args.previous, context_domains=args.context_domain or ())
    asked = router.route(args.clarified, **kw) if args.clarified is not None else None
    if asked is not None and asked.action != "clarify":
        from routecore.errors import InvalidArgumentError

        raise InvalidArgumentError(f"--clarified {args.clarified!r} was not clarified ({asked.action})")
    d = router.route(args.query, **kw, previous_query=args.previous_query, clarify=asked)
    from routecore.decide.reasons import NONE_OF_THESE  # after the model started loading

    if args.json:
        print(d.to_json(indent=2))
        return 0
    among = " among the routes" if d.out_of_scope else ""  # the reason's scale; the list's p include it
    print(
        f"action: {d.action}  route: {d.route}  tier: {d.tier}  confidence: {d.confidence:.3f}{among}  "
        f"margin: {d.margin:.3f}  calibrated: {d.calibrated}"
    )
    if d.reason is not None:
        print(f"reason [{d.reason.code}]: {d.reason.message}")
    if d.out_of_scope is not None:  # the routes' probabilities below share the rest
        print(f"  {NONE_OF_THESE:<12} p={d.out_of_scope:.3f}  (the routes below share the rest)")
    share = 1.0 - d.out_of_scope if d.out_of_scope is not None else 1.0  # the routes share the rest
    ranked = sorted(d.probabilities.items(), key=lambda kv: -kv[1])
    for name, p in ranked if args.all else ranked[:TOP_SHOWN]:
        lex = d.lexical_scores.get(name, 0.0)
        print(
            f"  {name:<12} p={p * share:.3f}  raw={d.raw_scores[name]:.3f}"
            + (f"  lexical=+{lex:.3f}" if lex else "")
            + f"  adjusted={d.adjusted_scores[name]:.3f}"
        )
    if len(ranked) > TOP_SHOWN and not args.all:
        print(f"  ... {len(ranked) - TOP_SHOWN} more routes (--all shows them)")
    if d.question:
        print(f"question: {d.question}")
    for a in d.alerts:
        print(f"alert [{a.kind}]: {a.message}")
    print(
        f"timings ms: encode {d.timings.tokenize + d.timings.encode:.2f}, "
        f"score {d.timings.score:.3f}, policy {d.timings.policy:.3f}"
    )
    return 0


def cmd_tools(args: argparse.Namespace) -> int:
    belt = _router(args, DEFAULT_TOOLS).tools(
        args.query,
        context_domains=args.context_domain or (),
        top_k=args.top_k,
        threshold=args.threshold,
        candidates=args.candidate,
    )
    if args.json:
        print(belt.to_json(indent=2))
        return 0
    if belt.reason is not None:
        print(f"reason [{belt.reason.code}]: {belt.reason.message}")
    for t in belt.tools:
        print(
            f"  {t.name:<22} {t.domain:<16} score={t.score:.3f}"
            + (f" (lexical +{t.lexical_score:.3f})" if t.lexical_score else "")
            + f" [{t.reason.code}] {t.reason.message}"
        )
    for a in belt.alerts:
        print(f"alert [{a.kind}]: {a.message}")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from routecore.hub import models

    if args.action == "list":
        rows = models.list_models()
        print(
            json.dumps([r.to_dict() for r in rows], indent=2)
            if args.json
            else "\n".join(f"{r.name:<20} {r.status:<10} {r.path or ''}" for r in rows)
        )
        return 0
    if args.action == "distill":
        return _distill(args)
    if not args.name:
        raise SystemExit("routecore models pull: give a model name, e.g. bge-m3")
    path = models.pull(args.name, force=args.force, quiet=args.json)
    print(
        json.dumps({"name": args.name, "path": str(path)}) if args.json else f"pulled {args.name} into {path}"
    )
    return 0


def _distill(args: argparse.Namespace) -> int:
    from routecore.hub import distill

    corpus = distill.read_corpus(args.corpus or [])
    r = distill.distill(args.name, dims=args.dims, vocab=args.vocab, corpus=corpus)
    if args.json:
        print(json.dumps(r.to_dict()))
    else:
        print(
            f"distilled {r.source} into {r.path}: {r.rows} of {r.vocab_size} pieces x {r.dims} dims "
            f"({r.pruning}); PCA keeps {100 * r.explained_variance:.1f} % of the variance; "
            f"{r.build_seconds:.1f} s on {r.threads} threads"
        )
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from routecore.config.config_schema import json_schema

    print(json.dumps(json_schema(), indent=None if args.json else 2, ensure_ascii=False))
    return 0


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("routecore")
    except PackageNotFoundError:  # run from a source tree
        from routecore._native import __version__

        return str(__version__)


class _Version(argparse.Action):
    """``--version``, read only when asked for (the package metadata costs ~50 ms a call)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **_: Any) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit"
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"routecore {_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="routecore", description="Semantic routing of LLM agent turns: routes, tool belts, confidence."
    )
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser(
        "route", help="route one query", description="Route one query to a route (or clarify / none)."
    )
    r.add_argument("query")
    r.add_argument(
        "--config", help=f"routes YAML/JSON (default: {DEFAULT_ROUTES.name}, an IT-operations example)"
    )
    r.add_argument("--bundle", help="a saved router bundle folder instead of --config")
    r.add_argument("--model", help="model folder or name (default: the bundled multilingual-e5-small)")
    r.add_argument(
        "--fast-model",
        metavar="NAME",
        help="a faster encoder in front of --model (a name in the model cache or a folder), as `serve "
        "--fast-model`: it decides what it routes at the high tier, the model the rest (docs/serve.md)",
    )
    r.add_argument(
        "--static", action="store_true", help="--fast-model MODEL-static: the model's distilled table"
    )
    r.add_argument("--previous", help="route of the previous turn")
    r.add_argument("--previous-query", help="text of the previous turn (a follow-up is read after it)")
    r.add_argument(
        "--clarified", metavar="QUERY", help="the query a clarification asked about: the query is its answer"
    )
    r.add_argument("--context-domain", action="append", help="active domain (repeatable)")
    r.add_argument(
        "--llm-url",
        help="OpenAI-compatible server of the LLM fallback "
        "(default: the config's llm.base_url, or OPENAI_BASE_URL)",
    )
    r.add_argument(
        "--llm-model",
        help="the LLM fallback's model (enables the fallback for a config without an llm: section)",
    )
    r.add_argument("--all", action="store_true", help=f"print every route (default: the best {TOP_SHOWN})")
    r.add_argument(
        "--no-cache", action="store_true", help="embed the config again instead of reusing its cached bundle"
    )
    r.add_argument("--json", action="store_true", help="print the decision as JSON")
    r.set_defaults(func=cmd_route)

    t = sub.add_parser(
        "tools",
        help="select the tool belt for one query",
        description="Select the tools to offer the LLM for one query.",
    )
    t.add_argument("query")
    t.add_argument("--config", help=f"tools YAML/JSON (default: {DEFAULT_TOOLS.name})")
    t.add_argument("--bundle", help="a saved router bundle folder instead of --config")
    t.add_argument("--model", help="model folder or name")
    t.add_argument("--context-domain", action="append", help="active domain (affinity; repeatable)")
    t.add_argument("--top-k", type=int, help="number of matched tools (default from policy: 5)")
    t.add_argument("--threshold", type=float, help="a floor for this call, read on each candidate")
    t.add_argument("--candidate", action="append", metavar="TOOL", help="offer only these tools (repeatable)")
    t.add_argument(
        "--mcp-stdio",
        action="append",
        metavar="CMD",
        help="list the tools of an MCP server started by this command line "
        "(repeatable; each server is a plugin)",
    )
    t.add_argument(
        "--mcp-url",
        action="append",
        metavar="URL",
        help="list the tools of a Streamable HTTP MCP server (repeatable)",
    )
    t.add_argument(
        "--overlay",
        help="YAML/JSON of routecore fields by tool name (examples, anti_patterns, domain, core, ...)",
    )
    t.add_argument(
        "--no-cache", action="store_true", help="embed the config again instead of reusing its cached bundle"
    )
    t.add_argument("--json", action="store_true", help="print the tool belt as JSON")
    t.set_defaults(func=cmd_tools)

    m = sub.add_parser(
        "models",
        help="list, pull or distill models",
        description="List models, download one into the cache, or distill a static table from one "
        "(written to the cache as NAME-static; nothing is downloaded).",
    )
    m.add_argument("action", choices=["list", "pull", "distill"])
    m.add_argument("name", nargs="?")
    m.add_argument("--dims", type=int, default=256, help="distill: width of the table (PCA)")
    m.add_argument("--vocab", type=int, default=None, help="distill: pieces kept by score or id")
    m.add_argument(
        "--corpus", action="append", help="distill: a text or JSONL file whose pieces are kept too"
    )
    m.add_argument("--force", action="store_true", help="download again even if present")
    m.add_argument("--json", action="store_true", help="JSON output")
    m.set_defaults(func=cmd_models)

    s = sub.add_parser(
        "schema",
        help="print the config file's JSON Schema",
        description="Print the JSON Schema of a routes/tools/policy config file (for editors and CI checks).",
    )
    s.add_argument(
        "--json", action="store_true", help="compact JSON on one line (the default output is indented JSON)"
    )
    s.set_defaults(func=cmd_schema)

    from routecore.doctor.doctor_cli import add_doctor_command
    from routecore.evaluation.cli import add_eval_commands
    from routecore.importers.semantic_router import add_import_command
    from routecore.serve.cli import add_serve_command

    add_eval_commands(sub)
    add_import_command(sub)
    add_serve_command(sub)
    add_doctor_command(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from routecore.errors import RoutecoreError

    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # The reader left (``| head``): stop quietly, as cat and grep do; no traceback at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE
    except (RoutecoreError, OSError) as e:
        # One line (an unwritable output folder is an OSError), or a JSON object on stdout under --json.
        msg = " ".join(str(e).split())
        if getattr(args, "json", False):
            print(json.dumps({"error": {"type": type(e).__name__, "message": msg}}, ensure_ascii=False))
        else:
            print(f"routecore: error: {msg}", file=sys.stderr)
        return 2
