"""Read semantic-router route configs (JSON or YAML, 0.x and 1.x layouts) as routecore configs.

The reader imports no router: :meth:`routecore.Router.from_semantic_router` builds one from what it
reads, and ``routecore import semantic-router`` (:mod:`routecore.importers.semantic_router`) writes it.

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

import json
import os
import warnings
from pathlib import Path
from typing import Any

from routecore.config.semantic_router_routes import (
    describe,
    load_file,
    merged_routes,
    router_settings,
    router_sources,
    threshold_floor,
)
from routecore.config.specs import parse_config
from routecore.errors import ConfigError, StorageIOError


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
    data = load_file(p)
    if not isinstance(data, dict):
        raise ConfigError(
            f"{p}: expected a semantic-router config (a mapping with router_type or routes), "
            f"found {describe(data)}"
        )
    if "router_type" in data:
        layout, sources = "1.x", list(router_sources(data, p, ""))
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
    routes = merged_routes(p, layout, router_settings(data), sources, cosine, thresholds, dropped)
    doc: dict[str, Any] = {"routes": routes}
    at_router = cosine and layout == "1.x"
    top = data.get("confidence_threshold")
    floor = threshold_floor(top, f"{p}: confidence_threshold", at_router and thresholds)
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
    Refuses to overwrite an existing file (:class:`ConfigError`) unless ``force``; a file that cannot
    be written is a :class:`StorageIOError`."""
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
    except OSError as e:
        raise StorageIOError(f"cannot write {p}: {e}") from e
    return p
