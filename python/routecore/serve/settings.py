"""The settings of one ``routecore serve`` process (:class:`ServeSettings`): what the command line
gave, as the app is built from them in this process or, with ``--workers N``, in each worker (through
an environment variable, as JSON). Importing this module imports neither Starlette nor uvicorn."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from typing import Optional

from routecore.config.schema_base import record_from_dict
from routecore.errors import ConfigError
from routecore.serve.defaults import DEFAULT_MAX_BATCH, DEFAULT_WINDOW_MS

#: Environment variable holding the bearer token (``--token-env`` names another).
TOKEN_ENV = "ROUTECORE_SERVE_TOKEN"


@dataclass(frozen=True)
class ServeSettings:
    """Everything ``routecore serve`` builds its app from (each field is the option of the same name;
    ``cache``, ``batching``: the negations of ``--no-cache``, ``--no-batching``)."""

    #: What to serve: a config (and its tool overlay) or a bundle, on ``model`` (and ``fast_model``).
    config: Optional[str] = None
    bundle: Optional[str] = None
    overlay: Optional[str] = None
    model: Optional[str] = None
    static: bool = False
    fast_model: Optional[str] = None
    llm_url: Optional[str] = None
    llm_model: Optional[str] = None
    cache: bool = True
    #: The lesson store (a SQLite path or a PostgreSQL URL; None: in memory).
    lessons: Optional[str] = None
    token_env: Optional[str] = TOKEN_ENV
    token_file: Optional[str] = None
    #: Micro-batching: on, the longest wait (ms) and the requests per batch.
    batching: bool = True
    window_ms: float = DEFAULT_WINDOW_MS
    max_batch: int = DEFAULT_MAX_BATCH
    #: Request limits.
    max_body_bytes: int = 1 << 20
    max_query_chars: int = 8192
    max_batch_queries: int = 256
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 512
    session_ttl: float = 300.0
    reload_poll_s: float = 2.0
    reload_settle_s: float = 5.0
    threads: int = 8
    log_level: str = "info"
    workers: int = 1

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "ServeSettings":
        """The settings of parsed arguments; neither ``--config`` nor ``--bundle`` serves the
        default of ``routecore route``, the bundled IT-operations example."""
        from routecore.examples import IT_OPS_ROUTES

        return cls(
            config=args.config or (None if args.bundle else str(IT_OPS_ROUTES)),
            bundle=args.bundle,
            overlay=args.overlay,
            model=args.model,
            static=args.static,
            fast_model=args.fast_model,
            llm_url=args.llm_url,
            llm_model=args.llm_model,
            cache=not args.no_cache,
            lessons=args.lessons,
            token_env=args.token_env,
            token_file=args.token_file,
            batching=not args.no_batching,
            window_ms=args.batch_window_ms,
            max_batch=args.max_batch,
            max_body_bytes=args.max_body_bytes,
            max_query_chars=args.max_query_chars,
            max_batch_queries=args.max_batch_queries,
            header_timeout=args.header_timeout,
            body_timeout=args.body_timeout,
            max_connections=args.max_connections,
            session_ttl=args.session_ttl,
            reload_poll_s=args.reload_poll,
            reload_settle_s=args.reload_settle,
            threads=args.threads,
            log_level=args.log_level,
            workers=args.workers,
        )

    def to_json(self) -> str:
        """The settings as the worker processes of ``--workers N`` read them (:meth:`from_json`)."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "ServeSettings":
        """The settings :meth:`to_json` wrote.

        Raises:
            ConfigError: not a JSON object of these settings (the field named).
        """
        try:
            d = json.loads(text)
        except ValueError as e:
            raise ConfigError(f"serve settings: not JSON ({e})") from None
        return record_from_dict(cls, d, "serve settings")
