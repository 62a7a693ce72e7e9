"""Import semantic-router route configs (JSON or YAML, 0.x and 1.x layouts) as routecore configs.

Layouts, as semantic-router's own source writes them:

* **0.x**: ``LayerConfig.to_file`` (``semantic_router/layer.py``, 0.0.x) and
  ``RouterConfig.to_file`` (``semantic_router/routers/base.py``, 0.1.x) write
  ``{encoder_type, encoder_name, routes}``, each route being ``Route.to_dict()``
  (``semantic_router/route.py``): ``{name, utterances, description, function_schemas,
  llm: {module, class, model} | null, score_threshold, metadata}``; older 0.0.x routes
  have a single ``function_schema`` and no ``metadata``.
* **1.x**: ``router.to_json`` / ``to_yaml`` (``semantic_router/config.py``, ``save_router``)
  write one router config picked by ``router_type``: ``indexed`` ``{encoder: {type, name},
  sparse_encoder, alpha, top_k, aggregation, index, confidence_threshold, calibrator,
  refresh_interval, routes}`` (no ``routes`` when a remote index holds them), ``decision``
  ``{model, instructions, confidence_threshold, calibrator, routes}``, ``chain`` / ``merge``
  ``{confidence_threshold, calibrator, weights, routers: [router configs]}``. A 1.x route is
  ``{name, utterances, description, confidence_threshold, metadata}``: no function schemas
  (a 1.x user keeps them in ``metadata``, which is kept as is).

Mapping. ``name``, ``utterances`` and ``description`` are kept (a routecore description is
also an exemplar; a 1.x indexed router does not embed it). The route's ``metadata`` is the
routecore route's ``metadata``, plus a ``semantic_router`` key: ``layout`` (``0.x``/``1.x``),
``router`` (the file's settings: encoder type and name, index, calibrator...; routes left
out) and the route's other fields (``function_schemas``, ``llm``, ``score_threshold`` or
``confidence_threshold``). A chain or merge file's routes are merged by name (utterances
added up, first description); each source route's fields are then listed under
``semantic_router.sources``.

Thresholds. By default they are dropped: kept in each route's ``metadata.semantic_router``
(``score_threshold``, ``confidence_threshold``; a 1.x router's own in ``router``) and not used,
and routecore calibrates its own out-of-scope cut and tiers zero-label for the encoder in use.
An :class:`ImportNote` warning says so, naming the thresholds and the file; ``routecore
import`` prints it on stderr. Why: where a semantic-router threshold is a cosine floor, it
sits on *its* encoder's cosine scale. That is so in 0.x, where a route matches when the best
cosine of its hits in the top_k is above its ``score_threshold``
(``RouteLayer._check_threshold``), and in a 1.x ``indexed`` router with no calibrator and no
sparse encoder, where a route is returned when the aggregated cosine of its hits (mean by
default) reaches its ``confidence_threshold``, else the router's. semantic-router's
documented example writes ``score_threshold: 0.5`` (its HuggingFace encoder's default) on
every route; with routecore's bundled e5 model, whose cosines sit near 0.8 even between
unrelated sentences, a 0.5 floor never fires: "what's a good pasta recipe" went to
``politics``. Elsewhere (a decision router, a calibrator, hybrid scores, a chain or merge)
thresholds are probabilities or mixed scores, which routecore never used.

``thresholds=True`` (``--thresholds``) keeps them as they are, for a routecore encoder on the
same cosine scale: in the two cosine cases a route's threshold becomes its
``thresholds.min_score`` and a 1.x router-level ``confidence_threshold`` ``policy.routes.min_score``,
so routecore answers no route when the best route's cosine is below it (a value outside [0, 1]
stays in metadata, with a warning). The encoder-level default of 0.x (the encoder's
``score_threshold``) is not in the files; 0.x wrote it into every route when a layer was built,
so saved routes usually carry it. semantic-router 1.x falls through to the next route that
clears its bar; routecore answers no route.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, TypeVar

from routecore.config.specs import load_yaml, parse_config, read_text
from routecore.errors import ConfigError

if TYPE_CHECKING:
    from routecore.routers.router import Router

_ROUTE_KEYS = ("name", "utterances", "description", "metadata")
_KINDS = ("indexed", "decision", "chain", "merge")


class ImportNote(UserWarning):
    """What an import changed on purpose, for the user to know: semantic-router's cosine
    thresholds left in metadata in favour of routecore's calibration (module docstring)."""


def read_semantic_router(path: str | os.PathLike[str], *, thresholds: bool = False) -> dict[str, Any]:
    """A routecore config document (``{"routes": [...], "policy"?: {...}}``) from a
    semantic-router saved config (module docstring: layouts and mapping).

    semantic-router's thresholds are kept in metadata only, and routecore calibrates its
    own; where they were cosine floors an :class:`ImportNote` warning names them.
    ``thresholds=True`` maps the cosine floors to ``min_score`` as they are (module
    docstring, "Thresholds"). The document is checked with
    :func:`routecore.config.specs.parse_config`. Raises :class:`ConfigError` naming the file
    (and the route) for unreadable or malformed files, routes with neither utterances nor
    a description, and non-text utterances."""
    p = Path(path)
    data = _load(p)
    if not isinstance(data, dict):
        raise ConfigError(
            f"{p}: expected a semantic-router config (a mapping with router_type or routes), found {_kind(data)}"
        )
    if "router_type" in data:
        layout, sources = "1.x", list(_sources(data, p, ""))
        cosine = (
            data["router_type"] == "indexed"
            and data.get("calibrator") is None
            and data.get("sparse_encoder") is None
        )
    elif "routes" in data:
        layout, sources, cosine = "0.x", [("", data["routes"])], True
    else:
        raise ConfigError(f"{p}: not a semantic-router config: no router_type (1.x) and no routes (0.x)")
    dropped: list[tuple[str, str, float]] = []  # (field, route or "the router", value) of the floors left out
    routes = _routes(p, layout, _settings(data), sources, cosine, thresholds, dropped)
    doc: dict[str, Any] = {"routes": routes}
    at_router = cosine and layout == "1.x"
    top = data.get("confidence_threshold")
    floor = _threshold(top, f"{p}: confidence_threshold", at_router and thresholds)
    if floor is not None:
        doc["policy"] = {"routes": {"min_score": floor}}
    elif at_router and not thresholds and top is not None:
        dropped.append(("confidence_threshold", "the router", float(top)))
    parse_config(doc, str(p))  # what is returned is a config routecore accepts
    if dropped:
        warnings.warn(ImportNote(_dropped_note(p, dropped)), stacklevel=2)
    return doc


def _dropped_note(p: Path, dropped: list[tuple[str, str, float]]) -> str:
    """The note that names the thresholds an import left in metadata, grouped by field and value."""
    groups: dict[tuple[str, float], list[str]] = {}
    for key, owner, value in dropped:
        groups.setdefault((key, value), []).append(owner)
    named = "; ".join(f"{key} {value:g} on {', '.join(owners)}" for (key, value), owners in groups.items())
    return (
        f"{p}: semantic-router's thresholds ({named}) are cosine floors on its own encoder's scale: "
        f"kept in metadata (semantic_router) only, routecore calibrates its own out-of-scope cut; "
        f"thresholds=True (routecore import --thresholds) keeps them as min_score"
    )


def write_config(doc: dict[str, Any], out_path: str | Path, *, force: bool = False) -> Path:
    """Write a routecore config: YAML for a ``.yaml``/``.yml`` path, JSON otherwise.
    Refuses to overwrite an existing file (:class:`ConfigError`) unless ``force``."""
    import yaml

    p = Path(out_path)
    if p.suffix.lower() in (".yaml", ".yml"):
        text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
    else:
        text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    try:
        with open(p, "w" if force else "x", encoding="utf-8") as f:
            f.write(text)
    except FileExistsError:
        raise ConfigError(f"{p} exists: pass force=True (--force) to overwrite it") from None
    return p


def router_from_semantic_router(
    path: str | os.PathLike[str], *, thresholds: bool = False, **router_kw: Any
) -> Router:
    """A :class:`routecore.Router` over the routes of a semantic-router config file
    (``thresholds``: as :func:`read_semantic_router`, whose :class:`ImportNote` it passes on).
    ``router_kw`` go to ``Router`` (``encoder``, ``policy``...); a given ``policy``
    replaces the imported one."""
    from routecore.decide.policy import Policy
    from routecore.routers.router import Router

    doc = read_semantic_router(path, thresholds=thresholds)
    routes, _ = parse_config(doc, str(path))
    policy = router_kw.pop("policy", None) or Policy.from_dict(doc.get("policy"), f"{path}: policy")
    return Router(routes, policy=policy, **router_kw)


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


def _load(p: Path) -> Any:
    text = read_text(p, "utf-8-sig")
    if not text.strip():
        raise ConfigError(f"{p} is empty")
    if p.suffix.lower() in (".yaml", ".yml"):
        return load_yaml(text, p)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"malformed JSON in {p}: line {e.lineno}: {e.msg}") from None
    except RecursionError:
        raise ConfigError(f"{p}: JSON nests too deep") from None


def _kind(v: Any) -> str:
    text = repr(v)
    return f"{type(v).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def _sources(cfg: dict[str, Any], p: Path, at: str) -> Iterator[tuple[str, Any]]:
    """(path prefix, routes) of each router a 1.x config holds, chains and merges unfolded."""
    kind = cfg.get("router_type")
    if kind not in _KINDS:
        raise ConfigError(f"{p}: {at}router_type: expected one of {', '.join(_KINDS)}, found {_kind(kind)}")
    if kind in ("chain", "merge"):
        subs = cfg.get("routers")
        if not isinstance(subs, list) or not subs:
            raise ConfigError(
                f"{p}: {at}routers: expected a non-empty list of router configs, found {_kind(subs)}"
            )
        for i, sub in enumerate(subs):
            if not isinstance(sub, dict):
                raise ConfigError(
                    f"{p}: {at}routers[{i}]: expected a router config mapping, found {_kind(sub)}"
                )
            yield from _sources(sub, p, f"{at}routers[{i}].")
        return
    if cfg.get("routes") is None:
        index = cfg.get("index")
        where = (
            f"the {index.get('type')!r} index holds them"
            if isinstance(index, dict) and index.get("type") not in (None, "local")
            else "none saved"
        )
        raise ConfigError(
            f"{p}: {at}routes: no routes in the file ({where}); save the router with its routes in a local index"
        )
    yield at, cfg["routes"]


def _settings(cfg: dict[str, Any]) -> dict[str, Any]:
    """The router's settings as saved (encoder, index, calibrator...), routes left out."""
    out = {k: v for k, v in cfg.items() if k != "routes" and v is not None}
    if isinstance(out.get("routers"), list):
        out["routers"] = [_settings(s) for s in out["routers"]]
    return out


def _threshold(v: Any, where: str, use: bool) -> float | None:
    """``v`` when it is to be used and can be a routecore cosine floor (a number in [0, 1]), else None."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ConfigError(f"{where}: expected a number, found {_kind(v)}")
    if not use:
        return None
    if not 0.0 <= v <= 1.0:
        warnings.warn(f"{where}: {v} is not a cosine floor in [0, 1]: kept in metadata only", stacklevel=3)
        return None
    return float(v)


def _route(r: Any, where: str) -> tuple[str, list[str], str, dict[str, Any], dict[str, Any]]:
    """(name, utterances, description, metadata, other fields) of one saved route, checked."""
    if not isinstance(r, dict):
        raise ConfigError(f"{where}: expected a route mapping, found {_kind(r)}")
    name = r.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{where}: name: expected a non-empty string, found {_kind(name)}")
    where = f"{where} ({name!r})"
    utterances = r.get("utterances") or []
    if not isinstance(utterances, list):
        raise ConfigError(f"{where}: utterances: expected a list of strings, found {_kind(utterances)}")
    for j, u in enumerate(utterances):
        if not isinstance(u, str):
            raise ConfigError(
                f"{where}: utterances[{j}]: expected text (routecore routes text only), found {_kind(u)}"
            )
    description = r.get("description") or ""
    if not isinstance(description, str):
        raise ConfigError(f"{where}: description: expected a string, found {_kind(description)}")
    metadata = r.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ConfigError(f"{where}: metadata: expected a mapping, found {_kind(metadata)}")
    if not utterances and not description.strip():
        raise ConfigError(f"{where}: has neither utterances nor a description; routecore needs at least one")
    extra = {k: v for k, v in r.items() if k not in _ROUTE_KEYS and v is not None}
    if "function_schema" in extra:  # 0.0.x: one schema
        extra.setdefault("function_schemas", [extra.pop("function_schema")])
    fs = extra.get("function_schemas")
    if fs is not None and not (isinstance(fs, list) and all(isinstance(s, dict) for s in fs)):
        raise ConfigError(f"{where}: function_schemas: expected a list of mappings, found {_kind(fs)}")
    return name, list(utterances), description, dict(metadata), extra


def _routes(
    p: Path,
    layout: str,
    settings: dict[str, Any],
    sources: list[tuple[str, Any]],
    cosine: bool,
    keep: bool,
    dropped: list[tuple[str, str, float]],
) -> list[dict[str, Any]]:
    """routecore routes from every source's routes; same names across sources are merged.
    Cosine floors (``cosine``) become ``thresholds.min_score`` when ``keep``, else they are
    listed in ``dropped`` (field, route, value)."""
    merged: dict[str, dict[str, Any]] = {}
    nested = len(sources) > 1
    for at, routes in sources:
        if not isinstance(routes, list):
            raise ConfigError(f"{p}: {at}routes: expected a list of routes, found {_kind(routes)}")
        if not routes:
            raise ConfigError(f"{p}: {at}routes: no routes")
        seen: set[str] = set()
        for i, r in enumerate(routes):
            where = f"{p}: {at}routes[{i}]"
            name, utterances, description, metadata, extra = _route(r, where)
            if name in seen:
                raise ConfigError(f"{where}: duplicate route name {name!r}")
            seen.add(name)
            out = merged.get(name)
            if out is None:
                info: dict[str, Any] = {
                    "layout": layout,
                    "router": copy.deepcopy(settings),
                }  # no YAML aliases
                out = merged[name] = {
                    "name": name,
                    "utterances": [],
                    "description": description,
                    "metadata": {**metadata, "semantic_router": info},
                }
                if "semantic_router" in metadata:  # the route's own key of that name is kept beside
                    info["metadata"] = {"semantic_router": metadata["semantic_router"]}
            info = out["metadata"]["semantic_router"]
            out["utterances"] += [u for u in utterances if u not in out["utterances"]]
            if not out["description"]:
                out["description"] = description
            if nested:  # what each router says of the route, beyond the merged fields
                src = {"at": f"{at}routes[{i}]", **extra}
                if description and description != out["description"]:
                    src["description"] = description
                if any(out["metadata"].get(k) != v for k, v in metadata.items()):
                    src["metadata"] = metadata
                info.setdefault("sources", []).append(src)
            else:
                info.update(extra)
            key = "score_threshold" if layout == "0.x" else "confidence_threshold"
            floor = _threshold(extra.get(key), f"{where} ({name!r}): {key}", cosine and keep)
            if floor is not None:
                out["thresholds"] = {"min_score": floor}
            elif cosine and not keep and extra.get(key) is not None:
                dropped.append((key, name, float(extra[key])))
    keys = (
        "name",
        "utterances",
        "description",
        "thresholds",
        "metadata",
    )  # a fixed order, empty fields left out
    return [{k: r[k] for k in keys if r.get(k)} for r in merged.values()]
