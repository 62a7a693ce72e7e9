"""Tool-belt assembly: core tools, top-k or threshold, the floor and the fallback tool, discovery
tools and collisions, over a :class:`routecore.tools.tool_catalog.ToolCatalog`; the tools' scores
(domain affinity, anti-patterns, experience lessons, entities) are :mod:`routecore.tools.tool_scores`',
the per-turn ``request_more_tools`` is :mod:`routecore.tools.session`'s."""

from __future__ import annotations

import time
from typing import Any, Mapping, Sequence

import numpy as np

from routecore import _native
from routecore.calibrate.languages import language_alert
from routecore.decide.arguments import query_vectors
from routecore.decide.conversation import routing_text
from routecore.decide.policy import resolved
from routecore.decide.tables import collision_alert
from routecore.decision import Alert, Reason, ScoreMap, Timings, ToolBelt, ToolChoice, trace
from routecore.errors import InvalidArgumentError
from routecore.tools.tool_catalog import ToolCatalog
from routecore.tools.tool_scores import ranked_scores


def candidate_mask(catalog: ToolCatalog, candidates: Sequence[str] | None) -> np.ndarray | None:
    """A mask of the tools ``candidates`` names (``None``: every tool)."""
    if candidates is None:
        return None
    if isinstance(candidates, str) or not all(isinstance(c, str) for c in candidates):
        raise InvalidArgumentError("candidates must be a list of tool names")
    pos = catalog.tools.pos
    unknown = [c for c in candidates if c not in pos]
    if unknown:
        raise InvalidArgumentError(
            f"candidates name unknown tools {unknown[:5]}{' ...' if len(unknown) > 5 else ''}"
        )
    mask = np.zeros(len(catalog.specs), bool)
    mask[[pos[c] for c in candidates]] = True
    return mask


class EncoderFailed(Exception):
    """:func:`query_embedding`'s encoder raised ``cause``: a tool search degrades instead of raising."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause


def query_embedding(
    catalog: ToolCatalog,
    text: str,
    vector: Any = None,
    encoded: tuple[np.ndarray, float, float] | None = None,
) -> tuple[np.ndarray, float, float]:
    """A tool search's query embedding, its tokenize ms, and the encoder ms spent before this call:
    ``encoded`` (embedding, tokenize ms, encoder ms) from a batched encoder call, else ``vector``
    (checked against the encoder's width), else ``text`` embedded now.

    Raises:
        InvalidArgumentError: a bad ``vector``.
        EncoderFailed: the encoder raised.
    """
    if encoded is not None:
        return encoded
    if vector is not None:
        return query_vectors(vector, catalog.encoder.dim, 1)[0], 0.0, 0.0
    try:
        enc = catalog.encoder.encode_with_stats([text])
    except Exception as e:  # noqa: BLE001 - the caller degrades
        raise EncoderFailed(e) from e
    return enc.embeddings[0], enc.tokenize_ms, 0.0


def _empty_belt(query: str, why: str, code: str = "no_tool", core: tuple[ToolChoice, ...] = ()) -> ToolBelt:
    return trace(
        "tool belt",
        ToolBelt(core, (Alert("no_tool", why),), query=query, no_tool=True, reason=Reason(code, why)),
    )


def _core(catalog: ToolCatalog) -> tuple[ToolChoice, ...]:
    """The catalog's always-on tools, unscored (a belt with nothing to score still holds them)."""
    specs = catalog.specs
    why = Reason("core", "a core tool: in every belt")
    return tuple(ToolChoice(specs[i].name, specs[i].domain, 0.0, 0.0, why) for i in catalog.core)


def _encoder_failed(catalog: ToolCatalog, query: str, e: Exception) -> ToolBelt:
    """The belt when the encoder fails: the core tools only, with an ``encoder_error`` alert and
    reason ``error`` (a route decision degrades the same way: it never raises)."""
    msg = f"the encoder failed ({type(e).__name__}: {e}): the core tools only"
    core = _core(catalog)
    belt = ToolBelt(
        core, (Alert("encoder_error", msg),), query=query, no_tool=True, reason=Reason("error", msg)
    )
    return trace("tool belt", belt)


def _checked(query: Any, top_k: int | None, threshold: float | None, p: Any) -> tuple[int, float | None]:
    if not isinstance(query, str):
        raise InvalidArgumentError(f"query must be a str, got {type(query).__name__}")
    k = p.tool_top_k if top_k is None else top_k
    th = p.tool_threshold if threshold is None else threshold
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1 << 31:
        raise InvalidArgumentError(f"top_k must be a whole number >= 1, got {k!r}")
    if th is not None and (isinstance(th, bool) or not isinstance(th, (int, float)) or not 0 <= th <= 1):
        raise InvalidArgumentError(f"threshold must be a number in [0, 1], got {th!r}")
    return k, th


def _choice_reasons(
    chosen: Mapping[str, str], scores: Sequence[float], domains: Sequence[str], floor: float, each: bool
) -> list[Reason]:
    """Why each chosen tool is in the belt (its code in ``chosen``), with the numbers compared; ``each``:
    every candidate read the floor (else the best one did)."""
    # The first tool chosen on its score, per domain: what a discovery tool of that domain came beside.
    by_domain: dict[str, str] = {}
    for (n, code), d in zip(chosen.items(), domains):
        if code in ("top_k", "threshold", "fallback"):
            by_domain.setdefault(d, n)
    out, rank = [], 0
    for code, score, d in zip(chosen.values(), scores, domains):
        if code in ("top_k", "threshold"):
            rank += 1
            gated = floor >= 0 and (each or rank == 1)  # what read the floor
            said = f"#{rank} by score, {score:.3f}" + (f" >= the floor {floor:.3f}" if gated else "")
        elif code == "discovery":
            said = f"a discovery tool of the {d!r} domain, beside {by_domain.get(d, 'a chosen tool')}"
        elif code == "fallback":
            said = f"the fallback tool: no candidate scored above the floor {floor:.3f}"
        else:
            said = "a core tool: in every belt"
        out.append(Reason(code, said))
    return out


def select_tools_batch(
    catalog: ToolCatalog,
    queries: Sequence[str],
    context_domains: Sequence[str],
    top_k: int | None,
    threshold: float | None,
    *,
    vectors: Any = None,
    candidates: Sequence[str] | None = None,
) -> list[ToolBelt]:
    """The tool belts of ``queries`` from one batched encoder call
    (:meth:`routecore.routers.router.Router.tools_batch`)."""
    if isinstance(queries, str):
        raise InvalidArgumentError("queries must be a list of strings; use tools() for one query")
    queries = list(queries)
    for q in queries:
        _checked(q, top_k, threshold, catalog.policy)
    if not queries or not catalog.specs:
        domains, k, th = context_domains, top_k, threshold
        return [select_tools(catalog, q, domains, k, th, candidates=candidates) for q in queries]
    t0 = time.perf_counter()
    if vectors is not None:
        embs, tok_ms = query_vectors(vectors, catalog.encoder.dim, len(queries)), 0.0
    else:
        try:
            enc = catalog.encoder.encode_with_stats([catalog.read_query(q)[0] for q in queries])
        except Exception as e:  # noqa: BLE001 - each belt degrades as tools() does, never a raise
            return [_encoder_failed(catalog, q, e) for q in queries]
        embs, tok_ms = enc.embeddings, enc.tokenize_ms
    share = (time.perf_counter() - t0) * 1e3 / len(queries)
    return [
        select_tools(
            catalog,
            q,
            context_domains,
            top_k,
            threshold,
            candidates=candidates,
            encoded=(embs[i], tok_ms / len(queries), share),
        )
        for i, q in enumerate(queries)
    ]


def select_tools(
    catalog: ToolCatalog,
    query: str,
    context_domains: Sequence[str],
    top_k: int | None,
    threshold: float | None,
    *,
    exclude: set[str] | None = None,
    candidates: Sequence[str] | None = None,
    vector: Any = None,
    encoded: tuple[np.ndarray, float, float] | None = None,
) -> ToolBelt:
    """The tool belt of ``query`` from ``catalog`` (see :meth:`routecore.routers.router.Router.tools`);
    ``exclude``: tools not to pick; ``candidates``: the only tools this call may offer (core and
    discovery tools included); ``vector``: the query's embedding, given by the caller; ``encoded``:
    (embedding, tokenize ms, encoder ms) from a batched encoder call."""
    p = catalog.policy
    k, th = _checked(query, top_k, threshold, p)
    if not catalog.specs:
        return _empty_belt(query, "this router has no tools")
    if not routing_text(query)[0]:
        always = _core(catalog)
        said = "the query is empty or blank" + (": the core tools only" if always else "")
        return _empty_belt(query, said, "empty_query", always)
    allowed = candidate_mask(catalog, candidates)
    if allowed is not None and not allowed.any():
        return _empty_belt(query, "no candidate tools were given")
    floor = -1.0 if th is None else th  # the calibrated floor unless the call gives one
    by_threshold = p.tool_selection == "threshold" or threshold is not None
    each = by_threshold or p.tool_floor == "each"  # else the floor gates the belt on its best candidate
    wanted = k + len(catalog.core) + len(exclude or ())
    t0 = time.perf_counter()
    routed, notes = catalog.read_query(query)
    try:
        q, tok_ms, before_ms = query_embedding(catalog, routed, vector, encoded)
    except EncoderFailed as e:  # degrade to the core tools, never crash
        return _encoder_failed(catalog, query, e.cause)
    t0 -= before_ms / 1e3
    t1 = time.perf_counter()
    alerts: list[Alert] = []
    alerts.extend(Alert(k, m) for k, m in notes)
    if threshold is None and catalog.languages is not None:  # a calibrated floor follows the query's language
        pl, lang = catalog.languages.policy_for(p, q)
        if lang is not None and pl.tool_threshold is not None and th is not None and pl.tool_threshold != th:
            alerts.append(language_alert(lang, {"tool_threshold": (pl.tool_threshold, th)}))
            th = floor = pl.tool_threshold
    # The best ``wanted`` tools are exact, which is all the floor and the cap look at.
    r, adjusted, banned, changed = ranked_scores(
        catalog, q, context_domains, max(p.exact_top, wanted), float("inf"), alerts, routed
    )
    raw, bound, table = r.dense, r.bound, catalog.tools
    lexical = r.lexical  # what the lexical pass added (entities' effects are in the adjusted scores only)
    if allowed is not None:  # the tools outside the candidates never enter the belt
        adjusted = np.where(allowed, adjusted, np.float32(-np.inf)).astype(np.float32)
        banned = True
    # Collisions are judged on the final scores (after anti-patterns and lessons), among tools that
    # can be offered.
    finite = (
        np.where(np.isfinite(adjusted), adjusted, np.float32(-1e30)).astype(np.float32)
        if banned
        else adjusted
    )
    if not (banned or changed) and isinstance(table.codes, slice):
        # Nothing changed the native step's scores, whose label codes are spec positions + 1.
        c = r.collision
        collision = None if c is None else (c[0] - 1, c[1] - 1, c[2])
    elif banned:
        live = np.flatnonzero(np.isfinite(adjusted))
        c = (
            _native.detect_collision(
                finite[live], table.domain_ids[live], resolved(p.collision_gap, "collision_gap")
            )
            if len(live) > 1
            else None
        )
        collision = None if c is None else (int(live[c[0]]), int(live[c[1]]), c[2])
    else:
        collision = (
            _native.detect_collision(finite, table.domain_ids, resolved(p.collision_gap, "collision_gap"))
            if len(finite) > 1
            else None
        )
    t2 = time.perf_counter()
    names, tools, domains = table.names, catalog.specs, table.domains
    pos, core = table.pos, catalog.core
    chosen: dict[str, str] = {names[i]: "core" for i in core if allowed is None or allowed[i]}
    finite_n = int(np.isfinite(adjusted).sum()) if banned else len(adjusted)
    m = min(finite_n, wanted)
    # One exact native top-m (ties to the lower index): O(tools), no full sort.
    shown_n = min(p.report_scores, finite_n)
    best, ranked = (
        _native.topk(finite, max(m, shown_n))
        if max(m, shown_n)
        else (np.zeros(0, np.float32), np.zeros(0, np.uint64))
    )
    shown_ix = ranked[:shown_n].astype(
        np.intp
    )  # numpy indices for the arrays' take() (numpy < 2.1 refuses uint64)
    ranked = ranked.tolist()  # plain ints: numpy scalars are slow to index with
    order, shown = ranked[:m], ranked[:shown_n]
    picked = 0
    for j, i in enumerate(order):
        if picked >= k or (best.item(j) < floor and (each or not picked)):  # best first: the rest are lower
            break
        n = names[i]
        if n in chosen or (exclude and n in exclude) or tools[i].core:
            continue
        chosen[n] = "threshold" if by_threshold else "top_k"
        picked += 1
    if not picked and k:
        fb = p.fallback_tool
        if (
            fb is not None
            and fb in pos
            and fb not in chosen
            and (allowed is None or allowed[pos[fb]])
            and not (exclude and fb in exclude)
        ):
            chosen[fb] = "fallback"  # the confidence gate: a general tool (web search...) rather than none
            alerts.append(
                Alert(
                    "no_tool",
                    f"no candidate tool scored above the floor {floor:.3f}: the belt holds its core tools "
                    f"and the fallback tool {fb!r}",
                    {"fallback_tool": fb},
                )
            )
        else:
            alerts.append(
                Alert(
                    "no_tool",
                    f"no candidate tool scored above the floor {floor:.3f}: the belt holds "
                    + ("only its core tools" if chosen else "no tool"),
                )
            )
    # The matched tools' plugins in belt order (a set's order changes with each process's string hashing).
    plugins = [d for d in dict.fromkeys(domains[pos[n]] for n, why in chosen.items() if why != "core") if d]
    discovery = catalog.discovery_tools(p.discovery_prefixes)
    for plugin in plugins:
        for n in discovery.get(plugin, ()):
            i = pos[n]
            # not a tool a lesson bans or whose required entity is missing (-inf, though it has exemplars)
            out = banned and adjusted.item(i) == -np.inf and bool(tools[i].exemplars())
            if (allowed is None or allowed[i]) and not out:
                chosen.setdefault(n, "discovery")
    if collision is not None and picked:  # two close tools that both miss the floor are not offered: no alert
        alerts.append(collision_alert(names[collision[0]], names[collision[1]], collision[2], table, "tool"))
    idx = [pos[n] for n in chosen]
    scores = adjusted.take(idx).tolist()
    choices = tuple(
        map(
            ToolChoice,
            chosen,
            [domains[i] for i in idx],
            scores,
            raw.take(idx).tolist(),
            _choice_reasons(chosen, scores, [domains[i] for i in idx], floor, each),
            lexical.take(idx).tolist() if lexical is not None else [0.0] * len(idx),
        )
    )
    # The reported scores: the top-k values are the final scores unless a lesson banned a tool.
    shown_names = [names[i] for i in shown]
    shown_adj = adjusted.take(shown_ix) if banned else best[:shown_n]
    bounds: ScoreMap | dict[str, float] = {}
    if table.storage == "int8":
        b = bound.take(shown_ix)
        estimated = np.flatnonzero(b).tolist()
        bounds = ScoreMap([shown_names[j] for j in estimated], b.take(estimated))
    t3 = time.perf_counter()
    # The best candidate the floor read: core tools are offered anyway, and excluded ones not at all.
    skip = exclude or set()
    lead = next((j for j, i in enumerate(order) if not tools[i].core and names[i] not in skip), -1)
    top = f"{names[order[lead]]} {best.item(lead):.3f}" if lead >= 0 else "no candidate"
    if picked:
        kinds = list(chosen.values())
        beside = [f"{n} {k} tool(s)" for k in ("core", "discovery") if (n := kinds.count(k))]
        also = f", beside {' and '.join(beside)}" if beside else ""
        why = Reason(
            "tools",
            f"{picked} tool(s) >= the floor {floor:.3f}{also}; the best, {top}"
            if each  # every candidate reads the floor; else it gates the belt on the best one
            else f"the best tool, {top}, >= the floor {floor:.3f}: the best {picked} offered{also}",
        )
    else:
        why = Reason("no_tool", f"the best tool {top} < the floor {floor:.3f}")
    belt = ToolBelt(
        choices,
        tuple(alerts),
        ScoreMap(shown_names, shown_adj),
        ScoreMap(shown_names, raw.take(shown_ix)),
        bounds,
        Timings(tok_ms, (t1 - t0) * 1e3 - tok_ms, (t2 - t1) * 1e3, (t3 - t2) * 1e3, 0.0, (t3 - t0) * 1e3),
        query,
        no_tool=bool(k) and not picked,
        lexical_scores=ScoreMap(shown_names, lexical.take(shown_ix)) if lexical is not None else {},
        entities=r.entities,
        reason=why,
    )
    return trace("tool belt", belt)
