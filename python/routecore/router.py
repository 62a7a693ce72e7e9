"""`Router`: routes and tool belts from one user turn, with a confidence policy.

A thin facade over a :class:`~routecore.route_table.RouteTable` (the route
decision), a :class:`~routecore.tool_catalog.ToolCatalog` (the tools, for
:mod:`routecore.toolbelt`) and the :class:`~routecore.policy.Policy` they share;
bundles are in :mod:`routecore.bundle`.
"""

from __future__ import annotations

import os
from operator import attrgetter
from typing import Any, Sequence

import numpy as np

from routecore import bundle
from routecore.calibration import Calibration, for_router
from routecore.decision import Decision, ToolBelt
from routecore.errors import ConfigError
from routecore.lexical import LexicalTable
from routecore.llm import LLMRouter
from routecore.memory import ExperienceMemory
from routecore.policy import Policy
from routecore.progress import Progress, ProgressArg
from routecore.route_table import RouteTable, with_route_thresholds
from routecore.specs import RouteSpec, ToolSpec, parse_config, read_config_file
from routecore.tables import AUTO_INT8_ELEMENTS, EncoderLike, embed_texts, exemplar_texts
from routecore.tool_catalog import ToolCatalog
from routecore.toolbelt import ToolSession, select_tools

__all__ = ["AUTO_INT8_ELEMENTS", "BUNDLE_VERSION", "EncoderLike", "Router"]

BUNDLE_VERSION = bundle.BUNDLE_VERSION


def _kept_on(*components: str, name: str, doc: str, settable: bool = True) -> property:
    """A Router attribute that lives on its ``components`` (read from the first, set on all)."""

    def set_(self: Router, value: Any) -> None:
        for c in components:
            setattr(getattr(self, c), name, value)

    return property(attrgetter(f"{components[0]}.{name}"), set_ if settable else None, doc=doc)


class Router:
    """Semantic router over routes and tools.

    Args:
        routes, tools: specifications (see :mod:`routecore.specs`).
        encoder: defaults to the bundled model (``Encoder.load()``).
        policy: every threshold and default (:class:`routecore.policy.Policy`).
        llm: optional fallback router (:class:`routecore.llm.LLMRouter`).
        memory: optional :class:`ExperienceMemory` whose lessons adjust tool scores.
        head: optional ``evaluation.head.LinearHead``: route probabilities and out of scope.
        storage: ``"auto"`` (default: int8 for tables of >= ``AUTO_INT8_ELEMENTS``
            elements, f32 below), ``"f32"``, ``"f16"`` or ``"int8"``. An int8 table is
            scanned in int8 and its contenders re-scored exactly (``Policy.exact_top``,
            ``exact_band``); routes outside them keep an estimate whose error bound is
            in ``Decision.score_bounds``.
        calibration: a :class:`~routecore.calibration.Calibration` to use (from a
            bundle, or ``routecore fit``). Without one, the policy's unset
            thresholds are calibrated zero-label from the exemplars and the bundled
            background set (:func:`routecore.calibration.zero_label`).
        progress: report the embedding of the exemplars: ``True`` for a line on
            stderr, or a callable ``(done, total)``. Silent by default.

    ``route_table`` and ``tool_catalog`` are the two parts; ``policy`` and
    ``encoder`` are shared by both (setting them updates both). ``spec_policy``
    is the policy as given (unset thresholds ``None``), ``policy`` the one in
    force, and ``calibrated`` says where its numbers come from.
    """

    policy = _kept_on("route_table", "tool_catalog", name="policy", doc="The policy of routes and tools (routes' thresholds merged in).")
    encoder = _kept_on("route_table", "tool_catalog", name="encoder", doc="The encoder of exemplars, queries and lessons.")
    llm = _kept_on("route_table", name="llm", doc="The optional LLM fallback router.")
    head = _kept_on("route_table", name="head", doc="The optional linear head (route probabilities and out of scope).")
    memory = _kept_on("tool_catalog", name="memory", doc="The optional experience memory of tool lessons.")
    route_specs = _kept_on("route_table", name="specs", doc="The route specifications.", settable=False)
    tool_specs = _kept_on("tool_catalog", name="specs", doc="The tool specifications.", settable=False)
    # Read by evaluation code, benches and tests.
    _routes = _kept_on("route_table", name="table", doc="The routes' ScoreTable.", settable=False)
    _tools = _kept_on("tool_catalog", name="tools", doc="The tools' ScoreTable.", settable=False)
    _anti = _kept_on("tool_catalog", name="anti", doc="The anti-patterns' ScoreTable.", settable=False)
    _route_by_name = _kept_on("route_table", name="by_name", doc="Route name -> spec.", settable=False)
    _tool_by_name = _kept_on("tool_catalog", name="by_name", doc="Tool name -> spec.", settable=False)
    _decide = _kept_on("route_table", name="_decide", doc="The route decision step (settable, to time or stub it).")

    def __init__(self, routes: Sequence[RouteSpec] = (), tools: Sequence[ToolSpec] = (), *, encoder: EncoderLike | None = None,
                 policy: Policy | None = None, llm: LLMRouter | None = None, memory: ExperienceMemory | None = None,
                 head: Any = None, storage: str = "auto", calibration: Calibration | None = None,
                 progress: ProgressArg = None, _vectors: dict[str, np.ndarray] | None = None, _lexical: dict[str, Any] | None = None):
        if not routes and not tools:
            raise ConfigError("a router needs at least one route or tool")
        if encoder is None:
            from routecore.encoder import Encoder

            encoder = Encoder.load()
        routes, tools = list(routes), list(tools)
        self.spec_policy = with_route_thresholds(policy or Policy(), routes)
        vec = dict(_vectors or {})
        owners: dict[str, list[int]] = {}
        texts: dict[str, list[str]] = {}
        todo: dict[str, list[str]] = {}
        for key, specs, attr in (("routes", routes, "exemplars"), ("tools", tools, "exemplars"), ("anti", tools, "anti_patterns")):
            texts[key], owners[key] = exemplar_texts(specs, attr)
            if vec.get(key) is None:
                todo[key] = texts[key]
        bar = Progress(sum(map(len, todo.values())), "embedding exemplars", progress) if progress else None
        for key, todo_texts in todo.items():
            vec[key] = embed_texts(encoder, todo_texts, progress=bar)
        lex: dict[str, Any] = {"routes": None, "tools": None}
        if self.spec_policy.lexical:  # BM25 tables of the same texts (tools: their names too); a bundle's are loaded
            saved = _lexical or {}
            if routes:
                lex["routes"] = (LexicalTable.from_index(saved["routes"], owners["routes"], len(routes)) if saved.get("routes")
                                 else LexicalTable(texts["routes"], owners["routes"], len(routes)))
            if tools:
                lex["tools"] = (LexicalTable.from_index(saved["tools"], owners["tools"], len(tools)) if saved.get("tools")
                                else LexicalTable(texts["tools"], owners["tools"], len(tools), [t.name for t in tools]))
        if calibration is None and not self.spec_policy.is_manual():
            calibration = for_router(encoder, self.spec_policy, vec["routes"], owners["routes"], len(routes),
                                     vec["tools"], owners["tools"], len(tools),
                                     lexical=lex["routes"] and (lex["routes"], texts["routes"]),
                                     tool_lexical=lex["tools"] and (lex["tools"], texts["tools"]))
        self.calibration = calibration
        policy = self.spec_policy.resolve(calibration)
        self.route_table = RouteTable(routes, encoder=encoder, policy=policy, llm=llm, head=head, storage=storage, vectors=vec["routes"],
                                      lexical=lex["routes"])
        self.tool_catalog = ToolCatalog(tools, encoder=encoder, policy=policy, memory=memory, storage=storage,
                                        vectors=vec["tools"], anti_vectors=vec["anti"], lexical=lex["tools"])
        self.route_table.calibrated = self.calibrated
        self.fitted: dict[str, Any] = {}  # calibration results (routecore fit), saved in bundles

    @property
    def calibrated(self) -> str:
        """``zero-label``, ``fitted`` or ``manual``: where the policy's numbers come from."""
        if self.calibration is not None and (self.calibration.source == "fitted" or not self.spec_policy.is_manual()):
            return self.calibration.source
        return "manual"

    def calibrate(self, calibration: Calibration) -> None:
        """Put ``calibration`` in force (``routecore fit``): the policy is resolved anew from it."""
        self.calibration = calibration
        self.policy = self.spec_policy.resolve(calibration)
        self.route_table.calibrated = self.calibrated

    @classmethod
    def from_config(cls, path: str | os.PathLike[str], **kw: Any) -> Router:
        """Load routes, tools and an optional ``policy`` mapping from YAML or JSON."""
        data = read_config_file(path)
        routes, tools = parse_config(data, str(path))
        if not routes and not tools:
            raise ConfigError(f"{path}: no routes and no tools")
        policy = kw.pop("policy", None) or Policy.from_dict(data.get("policy"), f"{path}: policy")
        return cls(routes, tools, policy=policy, **kw)

    # -- routes -------------------------------------------------------------------
    def route(self, query: str, *, previous: str | None = None, context_domains: Sequence[str] = (), clarify: Decision | None = None) -> Decision:
        """Decide which route handles ``query``. Never raises for any query string.

        Args:
            previous: the route of the previous turn (multi-turn prior).
            context_domains: active domains (affinity boost/penalty).
            clarify: a previous CLARIFY decision this query answers; routing is
                then limited to its candidates, on the original query plus the answer.
        """
        return self.route_table.route(query, previous=previous, context_domains=context_domains, clarify=clarify)

    def fallback_chain(self, route: str) -> tuple[str, ...]:
        """``route`` and the routes reached by following ``fallback_on_error``."""
        return self.route_table.fallback_chain(route)

    # -- tools ----------------------------------------------------------------------
    def tools(self, query: str, *, context_domain: str | None = None, top_k: int | None = None, threshold: float | None = None,
              candidates: Sequence[str] | None = None) -> ToolBelt:
        """The tool belt for ``query``: core tools, the best matches, discovery tools.

        ``candidates`` limits this call to those tools (names from the catalog; nothing
        is re-embedded). A router without tools answers with an empty belt."""
        return select_tools(self.tool_catalog, query, context_domain, top_k, threshold, candidates=candidates)

    def discovery_tools(self, prefixes: tuple[str, ...]) -> dict[str, list[str]]:
        """Plugin -> its tools whose names start with one of ``prefixes`` (cached)."""
        return self.tool_catalog.discovery_tools(prefixes)

    def tool_session(self, query: str, *, context_domain: str | None = None) -> ToolSession:
        """A per-turn :class:`routecore.toolbelt.ToolSession` (request_more_tools, breaker)."""
        return ToolSession(self.tool_catalog, query, context_domain)

    def record_lesson(self, query: str, tool: str, *, use: bool, context: str = "") -> int:
        """Remember a correction: for queries like ``query`` (in ``context``), (do not) use ``tool``."""
        return self.tool_catalog.record_lesson(query, tool, use=use, context=context)

    # -- bundles --------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str], *, fitted: dict[str, Any] | None = None) -> None:
        """Write config + embeddings + model id as a bundle folder (loads without re-embedding)."""
        bundle.save(self, path, fitted=fitted)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, encoder: EncoderLike | None = None, **kw: Any) -> Router:
        """Load a bundle; refuses it when ``encoder`` is not the model it was made with."""
        return bundle.load(cls, path, encoder=encoder, **kw)
