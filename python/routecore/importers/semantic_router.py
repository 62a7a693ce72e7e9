"""``routecore import semantic-router FILE``: a semantic-router route config (JSON or YAML, 0.x and 1.x
layouts) converted to a routecore config. The reader, and what maps to what, is
:mod:`routecore.config.semantic_router` (re-exported here, where it was first)."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import TypeVar

# Re-exported (``X as X``): the reader and the writer of routecore.config.semantic_router.
from routecore.config.semantic_router import ImportNote as ImportNote
from routecore.config.semantic_router import read_semantic_router as read_semantic_router
from routecore.config.semantic_router import write_config as write_config

_P = TypeVar("_P", bound=argparse.ArgumentParser)


def add_import_command(sub: argparse._SubParsersAction[_P]) -> None:
    """Register ``routecore import semantic-router FILE [-o OUT] [--force] [--json]``."""
    i = sub.add_parser(
        "import",
        help="convert another router's saved config to a routecore config",
        description="Convert a semantic-router route config (JSON/YAML, 0.x or 1.x) to a routecore config: "
        "routes, utterances, descriptions, function schemas and metadata. "
        "semantic-router's thresholds are kept in metadata: routecore calibrates "
        "its own (--thresholds keeps them).",
    )
    i.add_argument("source", choices=sorted(_READERS), help="the format of FILE")
    i.add_argument("file", help="the saved config to convert")
    i.add_argument(
        "-o",
        "--output",
        help="write the config here (.yaml/.yml: YAML, otherwise JSON); default: YAML on stdout",
    )
    i.add_argument("--force", action="store_true", help="overwrite --output if it exists")
    i.add_argument(
        "--thresholds",
        dest="thresholds",
        action="store_true",
        default=False,
        help="map the source's cosine thresholds to min_score as they are (they sit on its encoder's scale)",
    )
    i.add_argument(
        "--no-thresholds",
        dest="thresholds",
        action="store_false",
        help="keep the source's thresholds in metadata only, routecore calibrates its own (the default)",
    )
    i.add_argument("--json", action="store_true", help="print the config as JSON on stdout")
    i.set_defaults(func=cmd_import)


def cmd_import(args: argparse.Namespace) -> int:
    """Run ``routecore import``; errors (:class:`ConfigError`) are reported by the caller's ``main``.
    The import's notes and warnings go to stderr, one line each."""
    import yaml

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        doc = _READERS[args.source](args.file, thresholds=args.thresholds)
    for w in caught:
        print(f"{'note' if issubclass(w.category, ImportNote) else 'warning'}: {w.message}", file=sys.stderr)
    if args.output:
        out = write_config(doc, args.output, force=args.force)
        if not args.json:
            print(f"wrote {len(doc['routes'])} routes to {out}")
            return 0
    if args.json:
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False))
    return 0


_READERS = {"semantic-router": read_semantic_router}
