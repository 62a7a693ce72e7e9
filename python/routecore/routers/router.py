"""`Router`: routes and tool belts from one user turn, with a confidence policy.

A thin facade over a :class:`~routecore.routers.route_table.RouteTable` (the route
decision), a :class:`~routecore.tools.tool_catalog.ToolCatalog` (the tools, for
:mod:`routecore.tools.toolbelt`) and the :class:`~routecore.decide.policy.Policy` they share;
bundles are in :mod:`routecore.routers.bundle`.
"""

from __future__ import annotations

import os
from concurrent.futures import Executor
from operator import attrgetter
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

from routecore.calibrate.calibration import Calibration, fallback_note
from routecore.config.specs import RouteSpec, ToolSpec, parse_config, read_config_file
from routecore.config.tool_formats import tool_specs
from routecore.core.entities import EntityConfig, EntityMatcher, check_route_entities
from routecore.core.progress import ProgressArg
from routecore.decide.fitted import Fitted
from routecore.decide.policy import Policy, check_router_args, with_route_thresholds
from routecore.decide.tables import AUTO_INT8_ELEMENTS, EncoderLike, TableLexical, TableVectors
from routecore.decision import Decision, emit
from routecore.errors import ConfigError
from routecore.llm.llm import LLMRouter, llm_from_config
from routecore.memory.memory import ExperienceMemory
from routecore.routers import assembly, bundle
from routecore.routers.router_internals import RouterInternals
from routecore.routers.router_tools import ToolCalls
from routecore.updates import learning
from routecore.updates.router_changes import Changes

_T = TypeVar("_T")

__all__ = ["AUTO_INT8_ELEMENTS", "BUNDLE_VERSION", "EncoderLike", "Router"]

BUNDLE_VERSION = bundle.BUNDLE_VERSION


def _kept_on(*components: str, name: str, doc: str, settable: bool = True) -> property:
    """A Router attribute that lives on its ``components`` (read from the first, set on all)."""

    def set_(self: Router, value: Any) -> None:
        for c in components:
            setattr(getattr(self, c), name, value)

    return property(attrgetter(f"{components[0]}.{name}"), set_ if settable else None, doc=doc)


class Router(ToolCalls, Changes):
    """Semantic router over routes and tools.

    Args:
        routes, tools: specifications (see :mod:`routecore.config.specs`). Tools may also be
            MCP ``tools/list`` entries, OpenAI tool definitions or LangChain tools
            (:mod:`routecore.config.tool_formats`).
        encoder: defaults to the bundled model (``Encoder.load()``).
        policy: every threshold and default (:class:`routecore.decide.policy.Policy`).
        llm: optional fallback router (:class:`routecore.llm.llm.LLMRouter`).
        memory: optional :class:`ExperienceMemory` whose lessons adjust tool scores.
        head: optional ``routecore.calibrate.linear_head.LinearHead``: route probabilities and out of scope.
        storage: ``"auto"`` (default: int8 for tables of >= ``AUTO_INT8_ELEMENTS`` elements, f32
            below), ``"f32"``, ``"f16"`` or ``"int8"``. An int8 table is scanned in int8 and its
            contenders re-scored exactly (``Policy.exact_top``, ``exact_band``); routes outside
            them keep an estimate whose error bound is in ``Decision.score_bounds``.
        calibration: a :class:`~routecore.calibrate.calibration.Calibration` to use (from a bundle,
            or ``routecore fit``). Without one, the policy's unset thresholds are calibrated
            zero-label from the exemplars and the bundled background set
            (:func:`routecore.calibrate.calibration.zero_label`).
        progress: report the embedding of the exemplars: ``True`` for a line on stderr, or a
            callable ``(done, total)``. Silent by default.
        tool_overlay: routecore fields (examples, anti-patterns, domain, core, cost, latency, safety
            tags) by tool name, a mapping or a YAML/JSON file (``tool_formats.read_overlay``).
        entities: dictionaries and patterns of entity types
            (:class:`routecore.core.entities.EntityConfig`, a config's ``entities:``);
            routes may prefer or require them, and decisions list them.
        vectors: exemplar embeddings made beforehand (:class:`~routecore.decide.tables.TableVectors`:
            an evaluation's cache, a bundle's), not embedded again: ``encoder``'s rows, in exemplar order.
        lexical_indexes: BM25 indexes made beforehand (:class:`~routecore.decide.tables.TableLexical`).

    ``route_table`` and ``tool_catalog`` are the two parts; ``policy`` and
    ``encoder`` are shared by both (setting them updates both). ``spec_policy``
    is the policy as given (unset thresholds ``None``), ``policy`` the one in
    force, and ``calibrated`` says where its numbers come from.
    """

    policy = _kept_on("route_table", "tool_catalog", name="policy", doc="The policy of routes and tools.")
    encoder = _kept_on(
        "route_table", "tool_catalog", name="encoder", doc="The encoder of exemplars, queries and lessons."
    )
    llm = _kept_on("route_table", name="llm", doc="The optional LLM fallback router.")
    head = _kept_on(
        "route_table", name="head", doc="The optional linear head (route probabilities and out of scope)."
    )
    memory = _kept_on("tool_catalog", name="memory", doc="The optional experience memory of tool lessons.")
    route_specs = _kept_on("route_table", name="specs", doc="The route specifications.", settable=False)
    tool_specs = _kept_on("tool_catalog", name="specs", doc="The tool specifications.", settable=False)
    decide_step = _kept_on(
        "route_table", name="decide_step", doc="The route decision step (settable, to time or stub it)."
    )

    def __init__(
        self,
        routes: Sequence[RouteSpec] = (),
        tools: Sequence[ToolSpec] = (),
        *,
        encoder: EncoderLike | None = None,
        policy: Policy | None = None,
        llm: LLMRouter | None = None,
        memory: ExperienceMemory | None = None,
        head: Any = None,
        storage: str = "auto",
        calibration: Calibration | None = None,
        progress: ProgressArg = None,
        tool_overlay: str | os.PathLike[str] | Mapping[str, Any] | None = None,
        entities: EntityConfig | None = None,
        metrics: Callable[[Any], Any] | None = None,
        vectors: TableVectors | None = None,
        lexical_indexes: TableLexical | None = None,
    ):
        if not routes and not tools:
            raise ConfigError("a router needs at least one route or tool")
        check_router_args(routes, policy)
        if encoder is None:
            from routecore.core.encoder import Encoder

            encoder = Encoder.load()
        assert encoder is not None
        routes, tools = list(routes or ()), list(tools or ())
        if tool_overlay is not None or not all(isinstance(t, ToolSpec) for t in tools):
            tools = tool_specs(tools, overlay=tool_overlay)
        check_route_entities(routes, entities)
        check_route_entities(tools, entities, "tools", "tool")
        self.entities = entities
        self._entity_matcher = EntityMatcher(entities) if entities is not None and entities.kinds else None
        given = policy or Policy()
        self.spec_policy = with_route_thresholds(given, routes)
        #: routecore's own interface to this router (live updates, learning): not public API.
        self.internals = RouterInternals(storage, given, self._install, assembly.rebuild)
        parts = assembly.build(
            routes,
            tools,
            encoder=encoder,
            spec_policy=self.spec_policy,
            llm=llm,
            memory=memory,
            head=head,
            storage=storage,
            calibration=calibration,
            vectors=vectors,
            lexical=lexical_indexes,
            progress=progress,
        )
        self._install(parts)
        #: What ``routecore fit`` fitted (:mod:`routecore.decide.fitted`), saved in bundles.
        self.fitted: Fitted | None = None
        #: Called with every Decision and ToolBelt this router returns (a
        #: :class:`routecore.routers.routing_metrics.RoutingMetrics`, or any callable).
        self.metrics = metrics
        learning.load_stored(self)  # the learned exemplars a lesson store keeps (routecore.updates.learning)

    def _emit(self, result: _T) -> _T:
        learning.after_route(self, result)  # policy.learn_from_llm
        return emit(self.metrics, result)

    def _emit_all(self, results: list[_T]) -> list[_T]:
        return [self._emit(r) for r in results]

    def _install(self, parts: assembly.Parts) -> None:
        check_route_entities(parts.route_table.specs, self.entities)
        check_route_entities(parts.tool_catalog.specs, self.entities, "tools", "tool")
        parts.route_table.entities = parts.tool_catalog.entities = self._entity_matcher
        self.calibration = parts.calibration
        parts.route_table.learned = getattr(getattr(self, "route_table", None), "learned", None)  # learn()'s
        self.route_table, self.tool_catalog = parts.route_table, parts.tool_catalog
        self._sync_calibration()

    def _sync_calibration(self) -> None:
        """What the route table reads of the calibration in force: its source and the fallback
        alert's line."""
        self.route_table.calibrated = self.calibrated
        self.route_table.calibration_note = (
            fallback_note(self.calibration) if self.calibrated == "zero-label" else None
        )

    @property
    def calibrated(self) -> str:
        """``zero-label``, ``fitted`` or ``manual``: where the policy's numbers come from."""
        if self.calibration is not None and (
            self.calibration.source == "fitted" or not self.spec_policy.is_manual()
        ):
            return self.calibration.source
        return "manual"

    def calibrate(self, calibration: Calibration) -> None:
        """Put ``calibration`` in force (``routecore fit``): the policy is resolved anew from it."""
        self.calibration = calibration
        self.policy = self.spec_policy.resolve(calibration)
        self.route_table.set_languages(self.spec_policy, calibration)
        self.tool_catalog.set_languages(self.spec_policy, calibration)
        self.tool_catalog.set_lexical_form(self.spec_policy, calibration)  # a fitted stemmer and b
        self._sync_calibration()

    @classmethod
    def from_config(cls, path: str | os.PathLike[str] | Mapping[str, Any], **kw: Any) -> Router:
        """Load routes, tools, an optional ``policy`` and an optional ``llm`` section from YAML or JSON
        (a file, or the document itself as a mapping: errors then name ``config``).

        ``llm=`` (an :class:`~routecore.llm.llm.LLMRouter`) wins over the file's ``llm:``
        section; ``llm_url=`` and ``llm_model=`` override its ``base_url`` and ``model``
        (:func:`routecore.llm.llm.llm_from_config`)."""
        data = dict(path) if isinstance(path, Mapping) else read_config_file(path)
        path = "config" if isinstance(path, Mapping) else path
        routes, tools = parse_config(data, str(path))
        if not routes and not tools:
            raise ConfigError(f"{path}: no routes and no tools")
        policy = kw.pop("policy", None) or Policy.from_dict(data.get("policy"), f"{path}: policy")
        url, model = kw.pop("llm_url", None), kw.pop("llm_model", None)
        llm = kw.pop("llm", None) or llm_from_config(data.get("llm"), str(path), base_url=url, model=model)
        entities = kw.pop("entities", None) or EntityConfig.from_dict(
            data.get("entities"), f"{path}: entities"
        )
        try:
            return cls(routes, tools, policy=policy, llm=llm, entities=entities, **kw)
        except ConfigError as e:  # a cross-reference (bias rules, per_route, fallback_tool, entity types)
            if str(path) in str(e):
                raise
            raise ConfigError(f"{path}: {e}") from None

    @classmethod
    def from_semantic_router(
        cls, path: str | os.PathLike[str], *, thresholds: bool = False, **kw: Any
    ) -> Router:
        """A router over the routes of a semantic-router config file (0.x or 1.x layout;
        :mod:`routecore.config.semantic_router` says what maps to what). ``thresholds``: as
        :func:`~routecore.config.semantic_router.read_semantic_router`, whose
        :class:`~routecore.config.semantic_router.ImportNote` it passes on. ``kw`` go to the
        constructor (``encoder``, ``policy``...); a given ``policy`` replaces the imported one."""
        from routecore.config.semantic_router import read_semantic_router

        doc = read_semantic_router(path, thresholds=thresholds)
        routes, _ = parse_config(doc, str(path))
        policy = kw.pop("policy", None) or Policy.from_dict(doc.get("policy"), f"{path}: policy")
        return cls(routes, policy=policy, **kw)

    @classmethod
    def from_mcp(
        cls,
        servers: Iterable[Any],
        routes: Sequence[RouteSpec] = (),
        *,
        tool_overlay: Any = None,
        timeout: float = 30.0,
        missing_ok: bool = False,
        **kw: Any,
    ) -> Router:
        """A router over the tools that running MCP servers list (``routecore[mcp]``).

        ``servers``: command lines, URLs or mappings (:mod:`routecore.config.mcp_tools`); each
        server's name becomes its tools' domain (plugin). Call :meth:`afrom_mcp` from
        inside an event loop."""
        from routecore.config.mcp_tools import list_mcp_tools, mcp_tool_specs

        tools = mcp_tool_specs(
            list_mcp_tools(servers, timeout=timeout), overlay=tool_overlay, missing_ok=missing_ok
        )
        return cls(routes, tools, **kw)

    @classmethod
    async def afrom_mcp(
        cls,
        servers: Iterable[Any],
        routes: Sequence[RouteSpec] = (),
        *,
        tool_overlay: Any = None,
        timeout: float = 30.0,
        missing_ok: bool = False,
        **kw: Any,
    ) -> Router:
        """:meth:`from_mcp` from async code; the embedding runs in a worker thread."""
        import asyncio

        from routecore.config.mcp_tools import alist_mcp_tools, mcp_tool_specs

        tools = mcp_tool_specs(
            await alist_mcp_tools(servers, timeout=timeout), overlay=tool_overlay, missing_ok=missing_ok
        )
        return await asyncio.to_thread(cls, routes, tools, **kw)

    # -- routes -------------------------------------------------------------------
    def route(
        self,
        query: str,
        *,
        previous: str | None = None,
        context_domains: Sequence[str] = (),
        clarify: Decision | None = None,
        vector: Any = None,
        peer: Decision | None = None,
        peer_model: str | None = None,
        previous_query: str | None = None,
    ) -> Decision:
        """Decide which route handles ``query``. Never raises for any query string.

        Args:
            previous: the route of the previous turn (multi-turn prior; ``CLARIFY`` counts as none).
            previous_query: the previous turn's text: a query that alone is not routed is read after
                it too, and routed when that reading names the query's own best route (reason
                ``follow_up``: "and tomorrow?" after a weather question; docs/routers.md); not read
                with ``clarify``, whose query is the context.
            context_domains: active domains (affinity boost/penalty).
            clarify: a previous CLARIFY decision this query answers; routing is
                then limited to its candidates, on the original query plus the answer.
            vector: the query's embedding, when the caller already has one (from
                this router's encoder); ``query`` then only feeds the lexical scores.
                A wrong width raises :class:`DimensionMismatchError`, NaN or infinity
                :class:`NonFiniteError`.
            peer: another router's decision on ``query`` (another encoder's: a cascade's fast
                router); the routes' probabilities become the normalised geometric mean of both
                (docs/calibration.md, "A second encoder"). Not a Decision: InvalidArgumentError.
            peer_model: the peer encoder's ``model_id``: the combined decision meets the cuts
                measured for the pair when routecore has them (:mod:`routecore.calibrate.peer_cut`),
                else this router's own. Not a str: InvalidArgumentError.
        """
        return self._emit(
            self.route_table.route(
                query,
                previous=previous,
                context_domains=context_domains,
                clarify=clarify,
                vector=vector,
                peer=peer,
                peer_model=peer_model,
                previous_query=previous_query,
            )
        )

    def route_batch(
        self,
        queries: Sequence[str],
        *,
        previous: str | Sequence[str | None] | None = None,
        context_domains: Sequence[str] = (),
        vectors: Any = None,
        executor: Executor | None = None,
        peer: Sequence[Decision | None] | None = None,
        peer_model: str | None = None,
        previous_query: str | Sequence[str | None] | None = None,
    ) -> list[Decision]:
        """The decisions for ``queries``, embedded in one batched encoder call.

        Each decision is the one :meth:`route` gives for that query. ``previous`` and
        ``previous_query`` are one for all queries or one per query; ``vectors`` (``n x dim``) skips
        the encoder; ``executor`` decides the queries in its threads (their LLM
        fallback calls then overlap); ``peer``: one decision (or None) per query, by the model
        ``peer_model`` (as in :meth:`route`)."""
        return self._emit_all(
            self.route_table.route_batch(
                queries,
                previous=previous,
                context_domains=context_domains,
                vectors=vectors,
                executor=executor,
                peer=peer,
                peer_model=peer_model,
                previous_query=previous_query,
            )
        )

    async def aroute(self, query: str, **kw: Any) -> Decision:
        """:meth:`route` off the event loop (the native work releases the GIL); the
        LLM fallback is awaited on the loop when it has an async client."""
        from routecore.core.aio import check_call, run_off_loop  # asyncio loads on the first async call

        check_call(Router.route, self, query, **kw)
        return self._emit(await run_off_loop(self.route_table.route, self.llm, query, **kw))

    async def aroute_batch(self, queries: Sequence[str], **kw: Any) -> list[Decision]:
        """:meth:`route_batch` off the event loop."""
        from routecore.core.aio import check_call, run_off_loop  # asyncio loads on the first async call

        check_call(Router.route_batch, self, queries, **kw)
        return self._emit_all(await run_off_loop(self.route_table.route_batch, self.llm, queries, **kw))

    def fallback_chain(self, route: str) -> tuple[str, ...]:
        """``route`` and the routes reached by following ``fallback_on_error``."""
        return self.route_table.fallback_chain(route)

    # -- bundles --------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write config + embeddings + model id as a bundle folder (loads without re-embedding),
        with what a fit left in :attr:`fitted`."""
        bundle.save(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, encoder: EncoderLike | None = None, **kw: Any) -> Router:
        """Load a bundle; refuses it when ``encoder`` is not the model it was made with."""
        b = bundle.load(path, encoder=encoder, **kw)
        r = cls(b.routes, b.tools, policy=b.policy, vectors=b.vectors, lexical_indexes=b.lexical, **b.kw)
        bundle.restore(r, b)
        return r
