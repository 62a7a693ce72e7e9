"""The routes of a semantic-router saved config, read and checked: the file (JSON or YAML), the
routers a 1.x chain or merge holds, each route's fields and thresholds, and the merge of routes by
name into routecore routes (:mod:`routecore.config.semantic_router` describes the layouts and
the mapping)."""

from __future__ import annotations

import copy
import json
import math
import warnings
from pathlib import Path
from typing import Any, Iterator

from routecore.config.specs import load_yaml, read_text
from routecore.errors import ConfigError

__all__ = ["describe", "load_file", "merged_routes", "router_settings", "router_sources", "threshold_floor"]

_ROUTE_KEYS = ("name", "utterances", "description", "metadata")
_KINDS = ("indexed", "decision", "chain", "merge")


def load_file(p: Path) -> Any:
    """The file's data: YAML for a ``.yaml``/``.yml`` path, JSON otherwise (:class:`ConfigError` if
    empty or malformed)."""
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


def describe(v: Any) -> str:
    """``v``'s type and the start of its repr, for the messages that say what was found."""
    text = repr(v)
    return f"{type(v).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def router_sources(cfg: dict[str, Any], p: Path, at: str) -> Iterator[tuple[str, Any]]:
    """(path prefix, routes) of each router a 1.x config holds, chains and merges unfolded."""
    kind = cfg.get("router_type")
    if kind not in _KINDS:
        raise ConfigError(
            f"{p}: {at}router_type: expected one of {', '.join(_KINDS)}, found {describe(kind)}"
        )
    if kind in ("chain", "merge"):
        subs = cfg.get("routers")
        if not isinstance(subs, list) or not subs:
            raise ConfigError(
                f"{p}: {at}routers: expected a non-empty list of router configs, found {describe(subs)}"
            )
        for i, sub in enumerate(subs):
            if not isinstance(sub, dict):
                raise ConfigError(
                    f"{p}: {at}routers[{i}]: expected a router config mapping, found {describe(sub)}"
                )
            yield from router_sources(sub, p, f"{at}routers[{i}].")
        return
    if cfg.get("routes") is None:
        index = cfg.get("index")
        where = (
            f"the {index.get('type')!r} index holds them"
            if isinstance(index, dict) and index.get("type") not in (None, "local")
            else "none saved"
        )
        raise ConfigError(
            f"{p}: {at}routes: no routes in the file ({where}); "
            "save the router with its routes in a local index"
        )
    yield at, cfg["routes"]


def router_settings(cfg: dict[str, Any]) -> dict[str, Any]:
    """The router's settings as saved (encoder, index, calibrator...), routes left out."""
    out = {k: v for k, v in cfg.items() if k != "routes" and v is not None}
    if isinstance(out.get("routers"), list):
        out["routers"] = [router_settings(s) for s in out["routers"]]
    return out


def threshold_floor(v: Any, where: str, use: bool) -> float | None:
    """``v`` when it is to be used and can be a routecore cosine floor (a number in [0, 1]), else None."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ConfigError(f"{where}: expected a number, found {describe(v)}")
    if not use:
        return None
    if not 0.0 <= v <= 1.0:
        warnings.warn(f"{where}: {v} is not a cosine floor in [0, 1]: kept in metadata only", stacklevel=3)
        return None
    return float(v)


def _route(r: Any, where: str) -> tuple[str, list[str], str, dict[str, Any], dict[str, Any]]:
    """(name, utterances, description, metadata, other fields) of one saved route, checked."""
    if not isinstance(r, dict):
        raise ConfigError(f"{where}: expected a route mapping, found {describe(r)}")
    name = r.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{where}: name: expected a non-empty string, found {describe(name)}")
    where = f"{where} ({name!r})"
    utterances = r.get("utterances") or []
    if not isinstance(utterances, list):
        raise ConfigError(f"{where}: utterances: expected a list of strings, found {describe(utterances)}")
    for j, u in enumerate(utterances):
        if not isinstance(u, str):
            raise ConfigError(
                f"{where}: utterances[{j}]: expected text (routecore routes text only), found {describe(u)}"
            )
    description = r.get("description") or ""
    if not isinstance(description, str):
        raise ConfigError(f"{where}: description: expected a string, found {describe(description)}")
    metadata = r.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ConfigError(f"{where}: metadata: expected a mapping, found {describe(metadata)}")
    if not utterances and not description.strip():
        raise ConfigError(f"{where}: has neither utterances nor a description; routecore needs at least one")
    extra = {k: v for k, v in r.items() if k not in _ROUTE_KEYS and v is not None}
    if "function_schema" in extra:  # 0.0.x: one schema
        extra.setdefault("function_schemas", [extra.pop("function_schema")])
    fs = extra.get("function_schemas")
    if fs is not None and not (isinstance(fs, list) and all(isinstance(s, dict) for s in fs)):
        raise ConfigError(f"{where}: function_schemas: expected a list of mappings, found {describe(fs)}")
    return name, list(utterances), description, dict(metadata), extra


def merged_routes(
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
            raise ConfigError(f"{p}: {at}routes: expected a list of routes, found {describe(routes)}")
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
            floor = threshold_floor(extra.get(key), f"{where} ({name!r}): {key}", cosine and keep)
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
