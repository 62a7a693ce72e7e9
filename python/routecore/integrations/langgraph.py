"""LangGraph and LangChain integration (``pip install 'routecore[langgraph]'``).

Two pieces, both thin over a :class:`~routecore.routers.router.Router`:

* :func:`make_retrieve_tools`: a drop-in tool retrieval for ``langgraph-bigtool``::

      retrieve = make_retrieve_tools(router, registry=tool_registry)
      builder = create_agent(llm, tool_registry, retrieve_tools_function=retrieve.function,
                             retrieve_tools_coroutine=retrieve.coroutine)

  The ids it returns come from :meth:`Router.tools`, so every belt rule applies
  (core tools, domain affinity, anti-patterns, experience lessons, collisions).

* :func:`make_router_edge`: a conditional edge (and a node) that sends the
  conversation to the node of its route::

      edge = make_router_edge(router, clarify="ask", none="small_talk")
      graph.add_conditional_edges(START, edge.runnable(), edge.path_map)

``import routecore`` never imports this module, LangGraph or LangChain.

Known upstream issue: langgraph-bigtool 0.0.3 (its latest release) calls
``ToolNode.inject_tool_args``, which langgraph-prebuilt 1.x removed, so with
LangGraph 1.x its agent fails with ``AttributeError`` when the model calls a
retrieved tool. Retrieval and binding are unaffected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, NamedTuple, Sequence

from routecore.errors import missing_extra

try:
    from langchain_core.runnables import RunnableLambda
except ImportError as e:  # the extra is not installed
    raise missing_extra(
        "routecore.integrations.langgraph needs the langgraph extra", "langgraph", str(e)
    ) from e

from routecore.decide.arguments import context_domains_arg
from routecore.decide.conversation import human_texts, routing_query
from routecore.decide.policy import CLARIFY
from routecore.decision import Decision, ToolBelt
from routecore.errors import ConfigError, InvalidArgumentError

if TYPE_CHECKING:
    from routecore.routers.router import Router

__all__ = ["RetrieveTools", "RouterEdge", "make_retrieve_tools", "make_router_edge"]

_DESCRIPTION = "Retrieve the tools to use, given a search query describing the task."


class RetrieveTools(NamedTuple):
    """The sync and async retrieval functions, for ``create_agent``'s
    ``retrieve_tools_function`` and ``retrieve_tools_coroutine``."""

    function: Callable[[str], list[str]]
    coroutine: Callable[[str], Awaitable[list[str]]]


def make_retrieve_tools(
    router: Router,
    *,
    top_k: int | None = None,
    context_domains: Sequence[str] = (),
    include_core: bool = True,
    tool_ids: Mapping[str, str] | None = None,
    registry: Mapping[str, Any] | None = None,
    on_belt: Callable[[ToolBelt], None] | None = None,
    name: str = "retrieve_tools",
    description: str = _DESCRIPTION,
    context_domain: str | None = None,
) -> RetrieveTools:
    """Tool retrieval for langgraph-bigtool's ``create_agent``, backed by ``router.tools``.

    Both functions take the LLM's search ``query`` (the only argument the model
    sees) and return tool ids, the keys of bigtool's ``tool_registry``: the tool
    names by default, or ``tool_ids[name]`` (names missing from ``tool_ids`` keep
    their name). Ids are unique and ordered as in the belt: core tools, the best
    matches, then discovery tools.

    Args:
        top_k: matching tools per call (default ``policy.tool_top_k``). bigtool's own
            ``create_agent(limit=...)`` only configures its default store search and
            is never passed to a custom function: set ``top_k`` here instead.
        context_domains: the active domains, for the affinity boost (``context_domain``, one
            name: deprecated).
        include_core: return the router's core tools too (default). When no tool
            passes the floor (``belt.no_tool``) only core tools are returned, which
            is an empty list without core tools or with ``include_core=False``.
        tool_ids: tool name -> registry id, when the registry is keyed otherwise.
        registry: bigtool's tool registry; when given, every router tool must have
            its id in it (else :class:`ConfigError`), so no retrieval can hand
            bigtool an id it does not know.
        on_belt: called with each :class:`ToolBelt` (alerts, collision, scores), e.g.
            to log the collision alert; retrieval itself only returns ids.
        name, description: the retrieval tool's name and description, as the model sees them.
    """
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise InvalidArgumentError(f"top_k must be a whole number >= 1, got {top_k!r}")
    domains = context_domains_arg(context_domains, context_domain, "context_domain")
    ids = dict(tool_ids or {})
    unknown = sorted(set(ids) - {s.name for s in router.tool_specs})
    if unknown:
        raise ConfigError(f"tool_ids names tools the router does not have: {unknown[:10]}")
    if registry is not None:
        missing = sorted(n for n in (s.name for s in router.tool_specs) if ids.get(n, n) not in registry)
        if missing:
            raise ConfigError(
                f"tools of the router have no entry in the tool registry: "
                f"{missing[:10]}{' ...' if len(missing) > 10 else ''}"
            )

    def to_ids(belt: ToolBelt) -> list[str]:
        if on_belt is not None:
            on_belt(belt)
        out: dict[str, None] = {}
        for t in belt.tools:
            if include_core or t.reason.code != "core":
                out[ids.get(t.name, t.name)] = None
        return list(out)

    def retrieve_tools(query: str) -> list[str]:
        return to_ids(router.tools(query, context_domains=domains, top_k=top_k))

    async def aretrieve_tools(query: str) -> list[str]:
        return to_ids(await router.atools(query, context_domains=domains, top_k=top_k))

    for f in (retrieve_tools, aretrieve_tools):  # StructuredTool.from_function reads both
        f.__name__ = f.__qualname__ = name
        f.__doc__ = description
    return RetrieveTools(retrieve_tools, aretrieve_tools)


def _whole(d: Any) -> bool:
    """A decision as ``Decision.to_dict()`` wrote it (every required field), not a summary."""
    return (
        isinstance(d, Mapping)
        and {
            "action",
            "route",
            "tier",
            "confidence",
            "margin",
            "probabilities",
            "raw_scores",
            "adjusted_scores",
        }
        <= d.keys()
    )


def _get(state: Any, key: str, default: Any = None) -> Any:
    """``state[key]`` for dict states, ``state.key`` for dataclass or pydantic ones."""
    if isinstance(state, Mapping):
        return state.get(key, default)
    return getattr(state, key, default)


class RouterEdge:
    """Routes a LangGraph state to the node of its route (see :func:`make_router_edge`).

    Use it as a conditional edge (``edge`` or ``edge.runnable()``, which also has
    the async path), or as a node (``edge.node`` / ``edge.node_runnable()``) that
    writes the decision into the state, followed by ``edge.after_node`` as the
    conditional edge, so later nodes can read the clarify question.
    """

    def __init__(
        self,
        router: Router,
        *,
        routes_to_nodes: Mapping[str, str] | None = None,
        clarify: str = "clarify",
        none: str = "fallback",
        error: str | None = None,
        messages_key: str = "messages",
        previous_key: str | None = None,
        context_domains_key: str | None = None,
        route_key: str = "route",
        decision_key: str = "decision",
        last_n: int | None = None,
    ):
        if last_n is not None and (isinstance(last_n, bool) or not isinstance(last_n, int) or last_n < 1):
            raise InvalidArgumentError(f"last_n must be a whole number >= 1, got {last_n!r}")
        self.router = router
        self.route_names = tuple(s.name for s in router.route_specs)
        if not self.route_names:
            raise ConfigError("a router edge needs a router with routes")
        unknown = sorted(set(routes_to_nodes or ()) - set(self.route_names))
        if unknown:
            raise ConfigError(
                f"routes_to_nodes names unknown routes {unknown}; known: {list(self.route_names)}"
            )
        mapping: Mapping[str, str] = routes_to_nodes or {}
        self.nodes: dict[str, str] = {r: mapping.get(r, r) for r in self.route_names}
        self.clarify, self.none, self.error = clarify, none, error if error is not None else none
        self.messages_key, self.previous_key, self.context_domains_key = (
            messages_key,
            previous_key,
            context_domains_key,
        )
        self.route_key, self.decision_key, self.last_n = route_key, decision_key, last_n

    @property
    def path_map(self) -> list[str]:
        """Every node this edge can return, for ``add_conditional_edges(..., path_map)``."""
        return list(dict.fromkeys([*self.nodes.values(), self.clarify, self.none, self.error]))

    def node_for(self, decision: Decision | Mapping[str, Any]) -> str:
        """The node of ``decision`` (a :class:`Decision` or its ``to_dict()``)."""
        action, route = _get(decision, "action"), _get(decision, "route")
        if action == "route" and isinstance(route, str) and route in self.nodes:
            return self.nodes[route]
        if action == "clarify":
            return self.clarify
        if action == "none":
            return self.none
        if action == "error":
            return self.error
        raise InvalidArgumentError(f"not a routing decision: action {action!r}, route {route!r}")

    def route_args(self, state: Any) -> tuple[str, dict[str, Any]]:
        """The query and the keyword arguments of ``router.route`` for ``state``.

        The query is the newest human message, read after the one before it when alone it is not
        routed (``previous_query``: a follow-up, docs/routers.md); with ``last_n`` set, the
        :func:`routing_query` of that many. The previous
        route is ``state[previous_key]`` when that is one of the router's routes.
        When the decision stored in the state (by :meth:`node`) asked to clarify,
        the newest human message is routed as its answer, among its candidates.
        """
        messages = _get(state, self.messages_key)
        if not messages:
            raise InvalidArgumentError(
                f"the graph state has no {self.messages_key!r} to route (messages_key)"
            )
        kw: dict[str, Any] = {}
        if self.previous_key is not None:
            previous = _get(state, self.previous_key)
            if previous in self.route_names:
                kw["previous"] = previous
        if self.context_domains_key is not None:
            kw["context_domains"] = tuple(_get(state, self.context_domains_key) or ())
        asked = _get(state, self.decision_key)
        if asked is not None and _get(asked, "action") == "clarify" and _get(asked, "candidates"):
            kw["clarify"] = (
                asked
                if isinstance(asked, Decision)
                else Decision.from_dict(asked)
                if _whole(asked)
                else Decision(
                    action="clarify",
                    route=CLARIFY,
                    tier="low",
                    confidence=0.0,
                    margin=0.0,
                    probabilities={},
                    raw_scores={},
                    adjusted_scores={},
                    candidates=tuple(_get(asked, "candidates")),
                    question=_get(asked, "question"),
                    query=_get(asked, "query") or "",
                )
            )
            return routing_query(messages, last_n=1), kw
        if self.last_n is not None:
            return routing_query(messages, last_n=self.last_n), kw
        *earlier, query = human_texts(messages, last_n=2)
        if earlier:
            kw["previous_query"] = earlier[0]
        return query, kw

    def decide(self, state: Any) -> Decision:
        """``router.route`` for the conversation in ``state``."""
        query, kw = self.route_args(state)
        return self.router.route(query, **kw)

    async def adecide(self, state: Any) -> Decision:
        """:meth:`decide` with ``router.aroute`` (off the event loop)."""
        query, kw = self.route_args(state)
        return await self.router.aroute(query, **kw)

    def __call__(self, state: Any) -> str:
        """The conditional edge: the name of the node to run next."""
        return self.node_for(self.decide(state))

    async def acall(self, state: Any) -> str:
        """The async conditional edge."""
        return self.node_for(await self.adecide(state))

    def _update(self, d: Decision) -> dict[str, Any]:
        return {self.route_key: d.route, self.decision_key: d.to_dict()}

    def node(self, state: Any) -> dict[str, Any]:
        """A node: routes the conversation and writes ``{route_key: decision.route,
        decision_key: decision.to_dict()}`` into the state (declare both keys in the
        state schema). Follow it with :meth:`after_node` as the conditional edge."""
        return self._update(self.decide(state))

    async def anode(self, state: Any) -> dict[str, Any]:
        """The async :meth:`node`."""
        return self._update(await self.adecide(state))

    def after_node(self, state: Any) -> str:
        """The conditional edge after :meth:`node`: the node of the stored decision (no routing)."""
        decision = _get(state, self.decision_key)
        if decision is None:
            raise InvalidArgumentError(
                f"the graph state has no {self.decision_key!r}: run the router node first"
            )
        return self.node_for(decision)

    def runnable(self) -> RunnableLambda[Any, str]:
        """The edge as a runnable with a sync and an async path (``invoke`` and ``ainvoke``)."""
        return RunnableLambda(self.__call__, afunc=self.acall, name="routecore_edge")

    def node_runnable(self) -> RunnableLambda[Any, dict[str, Any]]:
        """:meth:`node` as a runnable with a sync and an async path."""
        return RunnableLambda(self.node, afunc=self.anode, name="routecore_router")


def make_router_edge(
    router: Router,
    *,
    routes_to_nodes: Mapping[str, str] | None = None,
    clarify: str = "clarify",
    none: str = "fallback",
    error: str | None = None,
    messages_key: str = "messages",
    previous_key: str | None = None,
    context_domains_key: str | None = None,
    route_key: str = "route",
    decision_key: str = "decision",
    last_n: int | None = None,
) -> RouterEdge:
    """A LangGraph conditional edge (and node) routing the conversation by route name.

    Args:
        router: a :class:`~routecore.routers.router.Router` with routes.
        routes_to_nodes: route name -> node name; routes not in it go to the node of
            their own name.
        clarify, none: the nodes of CLARIFY and out-of-scope (``none``) decisions.
        error: the node of ``error`` decisions (encoder down, no LLM); default ``none``.
        messages_key: the state key of the conversation (LangGraph's ``MessagesState``
            uses ``messages``); messages may be LangChain objects or dicts.
        previous_key: a state key holding the previous turn's route (e.g. ``route_key``),
            for the multi-turn prior; values that are not route names are ignored.
        context_domains_key: a state key holding the active domains (affinity).
        route_key, decision_key: where :meth:`RouterEdge.node` writes the route and
            ``Decision.to_dict()``.
        last_n: unset, the newest human message is routed, read after the one before it when
            alone it is not routed (a follow-up); set, that many human messages are routed as one
            text (:func:`routing_query`), which reads a change of topic with the turns before it
            (BENCHMARKS.md §5, follow-ups).

    ``edge.path_map`` lists every node it can return. A conversation without
    human text raises :class:`InvalidArgumentError`.
    """
    return RouterEdge(
        router,
        routes_to_nodes=routes_to_nodes,
        clarify=clarify,
        none=none,
        error=error,
        messages_key=messages_key,
        previous_key=previous_key,
        context_domains_key=context_domains_key,
        route_key=route_key,
        decision_key=decision_key,
        last_n=last_n,
    )
