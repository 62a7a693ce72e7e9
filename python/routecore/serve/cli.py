"""``routecore serve``: the subcommand (``add_serve_command``) and the uvicorn launch.

Importing this module imports neither Starlette nor uvicorn, so ``routecore``'s
parser can register the command without the ``serve`` extra installed.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
from typing import Any, Optional

from routecore.errors import ConfigError, missing_extra
from routecore.serve.settings import TOKEN_ENV as TOKEN_ENV
from routecore.serve.settings import ServeSettings

#: Settings handed to the worker processes of ``--workers N`` (N > 1).
SETTINGS_ENV = "ROUTECORE_SERVE_SETTINGS"
DEFAULT_PORT = 8321
#: The settings' defaults, which the options' defaults are.
_D = ServeSettings()


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine (``localhost``, 127.0.0.0/8, ::1).
    Other host names count as reachable from outside."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def resolve_token(token_env: Optional[str], token_file: Optional[str]) -> Optional[str]:
    """The bearer token from ``token_file`` (whitespace stripped) or else the ``token_env``
    variable; None without one."""
    if token_file:
        try:
            with open(token_file, encoding="utf-8") as f:
                token = f.read().strip()
        except OSError as e:
            raise ConfigError(f"cannot read the token file {token_file}: {e.strerror or e}") from None
        if not token:
            raise ConfigError(f"the token file {token_file} is empty")
        return token
    value = os.environ.get(token_env or TOKEN_ENV, "").strip()
    return value or None


def _log_to_stderr(level: str) -> None:
    """The app's own log lines (loads, reloads, bugs) beside uvicorn's, in its format."""
    import logging

    log = logging.getLogger("routecore.serve")
    if not log.handlers:
        h = logging.StreamHandler()
        h.setFormatter(logging.Formatter("%(levelname)s:     %(message)s"))
        log.addHandler(h)
        log.setLevel(level.upper())
        log.propagate = False


def app_from_settings(s: ServeSettings) -> Any:
    """The app ``routecore serve`` runs, from its settings."""
    from routecore.serve.app import Limits, RouterSource, create_app
    from routecore.serve.batcher import Batching
    from routecore.serve.connections import ConnectionLimits, configure

    _log_to_stderr(s.log_level)
    configure(ConnectionLimits(s.header_timeout, s.max_connections))
    memory = None
    if s.lessons:
        from routecore.memory.memory import ExperienceMemory

        memory = ExperienceMemory(s.lessons)
    source = RouterSource(
        s.config,
        s.bundle,
        overlay=s.overlay,
        model=s.model,
        llm_url=s.llm_url,
        llm_model=s.llm_model,
        cache=s.cache,
        static=s.static,
        fast_model=s.fast_model,
    )
    return create_app(
        source,
        token=resolve_token(s.token_env, s.token_file),
        memory=memory,
        limits=Limits(s.max_body_bytes, s.max_query_chars, s.max_batch_queries, s.body_timeout),
        batching=Batching(s.batching, s.window_ms, s.max_batch),
        session_ttl=s.session_ttl,
        reload_poll_s=s.reload_poll_s,
        threads=s.threads,
        reload_settle_s=s.reload_settle_s,
        wait_for_load=s.workers > 1,
    )


def app_from_env() -> Any:
    """The app of one worker process of ``--workers N`` (uvicorn's factory)."""
    return app_from_settings(ServeSettings.from_json(os.environ[SETTINGS_ENV]))


def cmd_serve(args: argparse.Namespace) -> int:
    for name, path, want_dir in (
        ("--config", args.config, False),
        ("--bundle", args.bundle, True),
        ("--overlay", args.overlay, False),
    ):
        if path and not (os.path.isdir(path) if want_dir else os.path.isfile(path)):
            raise ConfigError(f"{name} {path}: no such {'folder' if want_dir else 'file'}")
    if args.static or args.fast_model:
        from routecore.serve.fast_tier import check_fast_args, fast_encoder_name

        check_fast_args(args.static, args.fast_model, args.bundle)
        fast_encoder_name(args.model, args.static, args.fast_model)  # a missing one fails here, not later
    token = resolve_token(args.token_env, args.token_file)
    if token is None and not is_loopback(args.host) and not args.insecure:
        raise ConfigError(
            f"refusing to listen on {args.host} without a bearer token: "
            f"set {args.token_env or TOKEN_ENV} or --token-file, "
            "or pass --insecure to serve anyone who can reach the port"
        )
    try:
        import uvicorn
    except ImportError:
        raise missing_extra("routecore serve needs the serve extra", "serve") from None
    from routecore.serve.connections import protocol_class

    settings = ServeSettings.from_args(args)
    common: dict[str, Any] = {
        "host": args.host,
        "port": args.port,
        "log_level": args.log_level,
        "access_log": args.access_log,
        "timeout_graceful_shutdown": args.graceful_timeout,
        "lifespan": "on",
        "server_header": False,
        "http": protocol_class(args.http),
    }
    if args.workers > 1:
        os.environ[SETTINGS_ENV] = settings.to_json()
        uvicorn.run("routecore.serve.cli:app_from_env", factory=True, workers=args.workers, **common)
    else:
        uvicorn.run(app_from_settings(settings), **common)
    return 0


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        v = kind(text)
        if v < 0:
            raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
        return v

    return parse


def add_serve_command(sub: Any) -> argparse.ArgumentParser:
    """Register ``routecore serve`` on the subparsers ``sub`` of routecore's parser."""
    from routecore.serve import DEFAULT_MAX_BATCH, DEFAULT_WINDOW_MS

    s: argparse.ArgumentParser = sub.add_parser(
        "serve",
        help="serve the router over HTTP (needs routecore[serve])",
        description="Serve routes, tool belts and lessons as a JSON HTTP sidecar (uvicorn + Starlette), with "
        "micro-batching, Prometheus metrics at /metrics, OpenAPI at /openapi.json, hot reload on SIGHUP "
        "or a changed config/bundle file, and graceful shutdown on SIGTERM.",
    )
    src = s.add_mutually_exclusive_group()
    src.add_argument(
        "--config", help="routes/tools YAML or JSON (default, without --bundle: the IT-operations example)"
    )
    src.add_argument("--bundle", help="a saved router bundle folder")
    s.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1; any other needs a token or --insecure)",
    )
    s.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    s.add_argument(
        "--workers",
        type=int,
        default=_D.workers,
        help="worker processes, each with its own router, tool sessions and "
        "(without --lessons) lesson store (default 1)",
    )
    s.add_argument(
        "--token-env",
        default=TOKEN_ENV,
        metavar="NAME",
        help=f"environment variable holding the bearer token (default {TOKEN_ENV})",
    )
    s.add_argument("--token-file", help="file holding the bearer token (wins over --token-env)")
    s.add_argument("--insecure", action="store_true", help="allow a non-loopback address without a token")
    s.add_argument("--overlay", help="YAML/JSON of routecore fields by tool name")
    s.add_argument("--model", help="model folder or name (default: the bundled multilingual-e5-small)")
    s.add_argument(
        "--fast-model",
        metavar="NAME",
        help="put a faster encoder (a name in the model cache or a folder: all-minilm-l6-v2, a static "
        "table) in front of the model: a query it routes at the high tier skips the model, the others "
        "are decided on both where routecore has cuts for the pair (docs/config.md); every decision's "
        "cascade alert says which decided; tool belts and lessons stay the model's; /v1/learn is "
        "refused; needs --config",
    )
    s.add_argument(
        "--static",
        action="store_true",
        help="--fast-model MODEL-static: the model's own distilled table (docs/static.md; build it once "
        "with `routecore models distill MODEL`)",
    )
    s.add_argument("--llm-url", help="OpenAI-compatible server of the LLM fallback")
    s.add_argument("--llm-model", help="the LLM fallback's model")
    s.add_argument(
        "--no-cache", action="store_true", help="embed the config again instead of reusing its cached bundle"
    )
    s.add_argument(
        "--lessons",
        metavar="PATH",
        help="lesson store for /v1/lessons: a SQLite path or a postgresql:// URL shared by replicas "
        "(default: in memory, lost on exit)",
    )
    s.add_argument(
        "--no-batching", action="store_true", help="one encoder call per request instead of micro-batches"
    )
    s.add_argument(
        "--batch-window-ms",
        type=_positive(float),
        default=DEFAULT_WINDOW_MS,
        help=f"longest wait, in ms, for more requests to join a micro-batch (default {DEFAULT_WINDOW_MS:g})",
    )
    s.add_argument(
        "--max-batch",
        type=int,
        default=DEFAULT_MAX_BATCH,
        help=f"requests per micro-batch at most (default {DEFAULT_MAX_BATCH})",
    )
    s.add_argument(
        "--max-body-bytes",
        type=int,
        default=_D.max_body_bytes,
        help="request body limit (default 1 MiB; 413 above)",
    )
    s.add_argument(
        "--max-query-chars",
        type=int,
        default=_D.max_query_chars,
        help="characters per query (default 8192; 422 above)",
    )
    s.add_argument(
        "--max-batch-queries",
        type=int,
        default=_D.max_batch_queries,
        help="queries per /v1/route/batch request (default 256; 422 above)",
    )
    s.add_argument(
        "--header-timeout",
        type=_positive(float),
        default=_D.header_timeout,
        help="seconds a connection has to send a request's head, from its opening or its "
        "previous response; then 408 and closed (default 10; 0: no limit)",
    )
    s.add_argument(
        "--body-timeout",
        type=_positive(float),
        default=_D.body_timeout,
        help="seconds to receive a request's body once its head is in (default 30; 408 above; 0: no limit)",
    )
    s.add_argument(
        "--max-connections",
        type=_positive(int),
        default=_D.max_connections,
        help="open connections per worker process; one more is answered 503 and closed "
        "(default 512; 0: no cap)",
    )
    s.add_argument(
        "--http",
        choices=["auto", "h11", "httptools"],
        default="auto",
        help="HTTP parser: httptools when installed (auto, the default) or h11",
    )
    s.add_argument(
        "--session-ttl",
        type=_positive(float),
        default=_D.session_ttl,
        help="seconds a request_more_tools session lives unused (default 300)",
    )
    s.add_argument(
        "--reload-poll",
        type=_positive(float),
        default=_D.reload_poll_s,
        help="seconds between checks of the files for a change (0: never)",
    )
    s.add_argument(
        "--reload-settle",
        type=_positive(float),
        default=_D.reload_settle_s,
        help="seconds a config written in place must stay unchanged before it is reloaded; a file "
        "replaced by a rename reloads at the next poll (default 5)",
    )
    s.add_argument(
        "--threads",
        type=int,
        default=_D.threads,
        help=f"worker threads for the router's calls (default {_D.threads})",
    )
    s.add_argument(
        "--graceful-timeout",
        type=_positive(float),
        default=30.0,
        help="seconds to finish requests in flight on SIGTERM (default 30)",
    )
    s.add_argument(
        "--log-level", default=_D.log_level, choices=["critical", "error", "warning", "info", "debug"]
    )
    s.add_argument("--access-log", action="store_true", help="log every request (uvicorn's access log)")
    s.add_argument("--json", action="store_true", help="errors as JSON")
    s.set_defaults(func=cmd_serve)
    return s


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m routecore.serve.cli [serve options]``: the command without routecore's parser."""
    import sys

    from routecore.errors import RoutecoreError

    p = argparse.ArgumentParser(prog="routecore")
    add_serve_command(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(["serve", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args) or 0)
    except (RoutecoreError, OSError) as e:
        msg = " ".join(str(e).split())
        if args.json:
            print(json.dumps({"error": {"type": type(e).__name__, "message": msg}}, ensure_ascii=False))
        else:
            print(f"routecore: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
