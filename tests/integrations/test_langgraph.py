"""routecore.integrations.langgraph in real compiled LangGraph graphs, with a fake
chat model from langchain-core (no network): which tools reach the model after
langgraph-bigtool's retrieval step, and which node a router edge runs."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, Optional

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph_bigtool import create_agent  # type: ignore[import-untyped]
from pydantic import Field

from routecore import BiasRule, ConfigError, InvalidArgumentError, Policy, Router, RouteSpec
from routecore.integrations.langgraph import make_retrieve_tools, make_router_edge
from routecore.memory.memory import ExperienceMemory


@tool
def get_weather(city: str) -> str:
    """Current weather and forecast for a city."""
    return f"sunny in {city}"


@tool
def search_flights(origin: str, destination: str) -> str:
    """Search flights between two airports."""
    return f"AF123 {origin}-{destination}"


@tool
def get_invoice(invoice_id: str) -> str:
    """Fetch an invoice by id."""
    return f"invoice {invoice_id}"


@tool
def issue_refund(order_id: str) -> str:
    """Refund a customer's order."""
    return f"refunded {order_id}"


@tool
def restart_service(service: str) -> str:
    """Restart a running service."""
    return f"restarted {service}"


@tool
def get_logs(service: str) -> str:
    """Read the recent logs of a service."""
    return f"logs of {service}"


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return "sent"


@tool
def search_docs(query: str) -> str:
    """Search the internal documentation."""
    return "docs"


TOOLS = [
    get_weather,
    search_flights,
    get_invoice,
    issue_refund,
    restart_service,
    get_logs,
    send_email,
    search_docs,
]
REGISTRY: dict[str, BaseTool] = {f"id-{t.name}": t for t in TOOLS}
IDS = {t.name: f"id-{t.name}" for t in TOOLS}
OVERLAY = {
    "get_weather": {
        "success_examples": ["will it rain in Paris tomorrow", "what's the temperature in Berlin"],
        "domain": "travel",
    },
    "search_flights": {
        "success_examples": ["find me a flight from Paris to Rome", "book a plane ticket to Tokyo"],
        "domain": "travel",
    },
    "get_invoice": {
        "success_examples": ["show me invoice 4521", "download my last bill"],
        "domain": "billing",
    },
    "issue_refund": {
        "success_examples": ["I want my money back for order 77", "refund my purchase"],
        "domain": "billing",
    },
    "restart_service": {
        "success_examples": ["restart the nginx service", "reboot the payment api"],
        "domain": "ops",
    },
    "get_logs": {
        "success_examples": ["show the error logs of the api", "tail the nginx logs"],
        "domain": "ops",
    },
    "send_email": {"success_examples": ["email the team about the release"], "domain": "comms"},
    "search_docs": {
        "success_examples": ["how do I configure SSO", "where is the onboarding guide"],
        "domain": "docs",
        "core": True,
    },
}
ROUTES = [
    RouteSpec(
        "INCIDENT",
        (
            "the production server is down",
            "the api returns 500 errors",
            "our website is unreachable",
            "the database crashed last night",
        ),
    ),
    RouteSpec(
        "BILLING",
        (
            "I was charged twice this month",
            "I need a copy of my invoice",
            "refund my last payment",
            "update my credit card",
        ),
    ),
    RouteSpec(
        "TRAVEL",
        (
            "book me a flight to Rome",
            "find a hotel in Lisbon",
            "what's the weather at my destination",
            "change my train reservation",
        ),
    ),
]


@pytest.fixture(scope="module")
def tool_router(encoder):
    return Router([], TOOLS, encoder=encoder, tool_overlay=OVERLAY)


@pytest.fixture(scope="module")
def route_router(encoder):
    # The rule turns a close BILLING/TRAVEL call into CLARIFY.
    return Router(
        ROUTES, [], encoder=encoder, policy=Policy(bias_rules=(BiasRule("BILLING", "TRAVEL", "CLARIFY"),))
    )


class FakeToolModel(BaseChatModel):
    """Asks for tools with the user's words; once ``plan[query]`` is bound, calls it
    (``call_tool``) or names it; then answers with the tool's result. Records the
    names of the tools bound on each model call."""

    plan: dict[str, Any] = Field(default_factory=dict)
    call_tool: bool = True
    bound: list[list[str]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "fake-tool-model"

    def bind_tools(self, tools: Any, **kw: Any) -> Any:
        names = [t.name for t in tools]
        self.bound.append(names)
        return self.bind(tool_names=names)

    def _generate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, tool_names: Any = (), **kw: Any
    ) -> ChatResult:
        human = [m.text for m in messages if isinstance(m, HumanMessage)][-1]
        last = messages[-1]
        if isinstance(last, HumanMessage):
            msg = AIMessage(
                "", tool_calls=[{"name": "retrieve_tools", "args": {"query": human}, "id": "call-retrieve"}]
            )
        elif isinstance(last, ToolMessage) and last.text.startswith("Available tools:"):
            name, args = self.plan[human]
            if name not in tool_names:
                msg = AIMessage(f"no {name} among {tool_names}")
            elif self.call_tool:
                msg = AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call-{name}"}])
            else:
                msg = AIMessage(f"I would call {name}")
        else:
            msg = AIMessage(f"done: {last.text}")
        return ChatResult(generations=[ChatGeneration(message=msg)])


@pytest.fixture
def bigtool_tool_calls(monkeypatch):
    """langgraph-bigtool 0.0.3 (the latest) calls ``ToolNode.inject_tool_args``
    (graph.py, ``should_continue``), which langgraph-prebuilt 1.x removed: any call
    of a retrieved tool fails with AttributeError. Our tools take no injected
    arguments, so the old method was the identity on them."""
    if not hasattr(ToolNode, "inject_tool_args"):
        monkeypatch.setattr(
            ToolNode, "inject_tool_args", lambda self, call, state, store: call, raising=False
        )


def run_agent(
    model: FakeToolModel, retrieve: Any, query: str, *, use_async: bool = False, only_coroutine: bool = False
) -> dict:
    builder = create_agent(
        model,
        REGISTRY,
        retrieve_tools_function=None if only_coroutine else retrieve.function,
        retrieve_tools_coroutine=retrieve.coroutine,
    )
    graph = builder.compile()
    inputs = {"messages": [HumanMessage(query)]}
    return asyncio.run(graph.ainvoke(inputs)) if use_async else graph.invoke(inputs)


@pytest.mark.parametrize("use_async", [False, True])
def test_bigtool_agent_binds_the_tools_routecore_retrieves(tool_router, use_async):
    belts = []
    retrieve = make_retrieve_tools(
        tool_router, top_k=2, tool_ids=IDS, registry=REGISTRY, on_belt=belts.append
    )
    query = "the nginx service is down, restart it"
    model = FakeToolModel(plan={query: ("restart_service", {"service": "nginx"})}, call_tool=False)
    state = run_agent(model, retrieve, query, use_async=use_async)
    assert model.bound[0] == ["retrieve_tools"]  # bigtool starts with the retrieval tool only
    assert len(model.bound) == 2 and len(belts) == 1
    second = model.bound[1]
    assert second == ["retrieve_tools", *belts[0].names]  # exactly the belt, in its order
    assert second[1] == "search_docs"  # the core tool comes first
    assert "restart_service" in second and [
        t.reason.code for t in belts[0].tools if t.name == "restart_service"
    ] == ["top_k"]
    assert not {"get_weather", "search_flights", "send_email"} & set(second)
    assert {t.reason.code for t in belts[0].tools} <= {"core", "top_k", "discovery"}
    assert sum(t.reason.code == "top_k" for t in belts[0].tools) <= 2
    assert state["selected_tool_ids"] == [IDS[n] for n in belts[0].names]
    assert [m.type for m in state["messages"]] == ["human", "ai", "tool", "ai"]
    assert state["messages"][2].content == f"Available tools: {belts[0].names}"
    assert state["messages"][-1].content == "I would call restart_service"


@pytest.mark.parametrize(("use_async", "only_coroutine"), [(False, False), (True, False), (True, True)])
def test_bigtool_agent_calls_a_retrieved_tool(tool_router, bigtool_tool_calls, use_async, only_coroutine):
    retrieve = make_retrieve_tools(tool_router, top_k=1, tool_ids=IDS)
    query = "refund order 991, I want my money back"
    model = FakeToolModel(plan={query: ("issue_refund", {"order_id": "991"})})
    state = run_agent(model, retrieve, query, use_async=use_async, only_coroutine=only_coroutine)
    # core, the best match, and the discovery tool of its plugin (billing: get_*)
    assert model.bound[1] == ["retrieve_tools", "search_docs", "issue_refund", "get_invoice"]
    assert [m.type for m in state["messages"]] == ["human", "ai", "tool", "ai", "tool", "ai"]
    assert state["messages"][-1].content == "done: refunded 991"


@pytest.mark.skipif(
    hasattr(ToolNode, "inject_tool_args"), reason="this langgraph still has ToolNode.inject_tool_args"
)
def test_bigtool_without_the_shim_fails_on_a_tool_call(tool_router):
    """The upstream bug the fixture above works around; when this fails, drop the fixture."""
    query = "refund order 991, I want my money back"
    model = FakeToolModel(plan={query: ("issue_refund", {"order_id": "991"})})
    with pytest.raises(AttributeError, match="inject_tool_args"):
        run_agent(model, make_retrieve_tools(tool_router, top_k=1, tool_ids=IDS), query)


def test_retrieve_tools_ids_core_and_no_tool(tool_router):
    retrieve = make_retrieve_tools(tool_router, top_k=1)
    assert retrieve.function.__name__ == "retrieve_tools" and "search query" in (
        retrieve.function.__doc__ or ""
    )
    # core, the best match, and the discovery tool of its plugin (travel: search_*)
    want = ["search_docs", "get_weather", "search_flights"]
    assert retrieve.function("weather in Lisbon tomorrow") == want
    assert asyncio.run(retrieve.coroutine("weather in Lisbon tomorrow")) == want
    # Nothing fits: only the core tools, or nothing at all without them.
    assert retrieve.function("bake a chocolate cake") == ["search_docs"]
    no_core = make_retrieve_tools(tool_router, top_k=1, include_core=False)
    assert no_core.function("weather in Lisbon tomorrow") == want[1:]
    assert no_core.function("bake a chocolate cake") == []
    named = make_retrieve_tools(tool_router, name="find_tools", description="Find tools.")
    assert (
        named.function.__name__ == named.coroutine.__name__ == "find_tools"
        and named.function.__doc__ == "Find tools."
    )


def test_retrieval_applies_the_routers_rules(tool_router):
    """Lessons (experience memory), the domain affinity and the belt's alerts all apply."""
    query = "weather in Lisbon tomorrow"
    belts: list = []
    retrieve = make_retrieve_tools(tool_router, top_k=1, include_core=False, on_belt=belts.append)
    assert retrieve.function(query)[0] == "get_weather"
    tool_router.memory = ExperienceMemory(":memory:")
    try:
        tool_router.record_lesson(query, "get_weather", use=False)  # "never get_weather for this"
        assert "get_weather" not in retrieve.function(query)
        assert "get_weather" not in asyncio.run(retrieve.coroutine(query))
    finally:
        tool_router.memory = None
    assert retrieve.function(query)[0] == "get_weather"
    # The belt, with its alerts, reaches on_belt.
    assert retrieve.function("bake a chocolate cake") == [] and belts[-1].no_tool
    assert "no_tool" in {a.kind for a in belts[-1].alerts}
    # The domain affinity: the same vague request, another domain, another tool.
    vague = "get the last one"
    for domain, want in (("ops", "get_logs"), ("billing", "get_invoice")):
        retrieve = make_retrieve_tools(tool_router, top_k=1, include_core=False, context_domains=[domain])
        assert retrieve.function(vague) == [want]


def test_retrieve_tools_refuses_a_registry_without_the_routers_tools(tool_router):
    with pytest.raises(ConfigError, match="no entry in the tool registry"):
        make_retrieve_tools(tool_router, registry={t.name: t for t in TOOLS[:3]})
    with pytest.raises(ConfigError, match="get_weather"):
        make_retrieve_tools(tool_router, registry=REGISTRY)  # keyed by id, no tool_ids given
    with pytest.raises(ConfigError, match="does not have: \\['nope'\\]"):
        make_retrieve_tools(tool_router, tool_ids={**IDS, "nope": "x"})
    for bad in (0, True, 2.5):
        with pytest.raises(InvalidArgumentError, match="top_k"):
            make_retrieve_tools(tool_router, top_k=bad)


class RoutedState(MessagesState):
    ran: Annotated[list[str], operator.add]
    route: Optional[str]
    decision: Optional[dict]


def handler(name: str) -> Any:
    def node(state: RoutedState) -> dict:
        question = (state.get("decision") or {}).get("question")
        return {
            "ran": [name],
            "messages": [AIMessage(question if name == "ask" and question else f"{name} handled it")],
        }

    return node


NODES = {"INCIDENT": "incident", "BILLING": "billing", "TRAVEL": "travel"}


def edge_graph(edge: Any, path: Any) -> Any:
    g = StateGraph(RoutedState)
    for n in edge.path_map:
        g.add_node(n, handler(n))
        g.add_edge(n, END)
    g.add_conditional_edges(START, path, edge.path_map)
    return g.compile()


@pytest.mark.parametrize("as_runnable", [False, True])
def test_router_edge_runs_the_node_of_the_route(route_router, as_runnable):
    edge = make_router_edge(route_router, routes_to_nodes=NODES, clarify="ask", none="small_talk")
    assert edge.path_map == ["incident", "billing", "travel", "ask", "small_talk"]
    graph = edge_graph(edge, edge.runnable() if as_runnable else edge)
    cases = {
        "the checkout service is throwing errors": "incident",
        "why did you charge my card twice": "billing",
        "I need a flight to Berlin tomorrow": "travel",
        "bake a chocolate cake": "small_talk",
        "pay for my flight": "ask",
    }
    for query, node in cases.items():
        out = graph.invoke({"messages": [SystemMessage("be brief"), HumanMessage(query)], "ran": []})
        assert out["ran"] == [node], query
    with pytest.raises(InvalidArgumentError, match="no human message with text"):
        graph.invoke({"messages": [SystemMessage("be brief")], "ran": []})


def test_router_edge_reads_a_follow_up_after_the_turn_before_and_a_new_topic_alone(route_router):
    """The newest human message decides; one that alone is not routed is read after the human message
    before it (``previous_query``). ``last_n`` set routes that many messages as one text."""
    edge = make_router_edge(route_router, routes_to_nodes=NODES, clarify="ask", none="small_talk")
    graph = edge_graph(edge, edge)

    def talk(*turns: str, graph: Any = graph) -> list[str]:
        msgs: list[Any] = []
        for t in turns[:-1]:
            msgs += [HumanMessage(t), AIMessage("noted")]
        return graph.invoke({"messages": [*msgs, HumanMessage(turns[-1])], "ran": []})["ran"]

    assert talk("for two people please") == ["small_talk"]
    assert talk("book me a flight to Rome", "for two people please") == ["travel"]
    assert talk("I was charged twice this month", "can you send it back") == ["billing"]
    assert talk("book me a flight to Rome", "bake a chocolate cake") == ["small_talk"]
    assert talk("book me a flight to Rome", "I was charged twice for it") == ["billing"]
    joined = make_router_edge(route_router, routes_to_nodes=NODES, clarify="ask", none="small_talk", last_n=2)
    as_one = edge_graph(joined, joined)
    assert talk("book me a flight to Rome", "bake a chocolate cake", graph=as_one) == ["travel"]


class SpyRouter:
    """Counts the sync and async routing calls of a router."""

    def __init__(self, router: Router):
        self.router, self.calls = router, list[str]()
        self.route_specs = router.route_specs

    def route(self, query: str, **kw: Any) -> Any:
        self.calls.append("route")
        return self.router.route(query, **kw)

    async def aroute(self, query: str, **kw: Any) -> Any:
        self.calls.append("aroute")
        return await self.router.aroute(query, **kw)


def test_router_edge_async_in_ainvoke(route_router):
    spy = SpyRouter(route_router)
    edge = make_router_edge(spy, routes_to_nodes=NODES, clarify="ask", none="small_talk")
    graph = edge_graph(edge, edge.runnable())
    out = asyncio.run(
        graph.ainvoke({"messages": [HumanMessage("the api returns 500 errors since noon")], "ran": []})
    )
    assert out["ran"] == ["incident"] and spy.calls == ["aroute"]
    assert asyncio.run(edge.acall({"messages": [HumanMessage("refund my last payment")]})) == "billing"


@pytest.mark.parametrize("use_async", [False, True])
def test_router_node_stores_the_decision_and_answers_a_clarify(route_router, use_async):
    edge = make_router_edge(
        route_router, routes_to_nodes=NODES, clarify="ask", none="small_talk", previous_key="route"
    )
    g = StateGraph(RoutedState)
    g.add_node("router", edge.node_runnable())
    for n in edge.path_map:
        g.add_node(n, handler(n))
        g.add_edge(n, END)
    g.add_edge(START, "router")
    g.add_conditional_edges("router", edge.after_node, edge.path_map)
    graph = g.compile(checkpointer=InMemorySaver())
    cfg: Any = {"configurable": {"thread_id": f"t-{use_async}"}}

    def turn(text: str) -> dict:
        inputs = {"messages": [HumanMessage(text)]}
        return asyncio.run(graph.ainvoke(inputs, cfg)) if use_async else graph.invoke(inputs, cfg)

    out = turn("pay for my flight")
    assert out["ran"] == ["ask"] and out["route"] == "CLARIFY"
    assert out["decision"]["candidates"] == ["TRAVEL", "BILLING"]
    assert (
        out["messages"][-1].content == out["decision"]["question"]
    )  # the clarify node read it from the state
    out = turn("the invoice part")  # the answer, routed among the candidates
    assert out["ran"] == ["ask", "billing"] and out["route"] == "BILLING"
    assert out["decision"]["query"] == "pay for my flight\nthe invoice part"
    out = turn("the database crashed again")
    assert out["ran"][-1] == "incident" and out["decision"]["previous_route"] == "BILLING"


def test_router_edge_configuration_errors(route_router, tool_router):
    with pytest.raises(ConfigError, match="unknown routes"):
        make_router_edge(route_router, routes_to_nodes={"NOPE": "x"})
    with pytest.raises(ConfigError, match="needs a router with routes"):
        make_router_edge(tool_router)
    edge = make_router_edge(route_router, error="broken")
    assert edge.path_map == ["INCIDENT", "BILLING", "TRAVEL", "clarify", "fallback", "broken"]
    assert edge.node_for({"action": "error", "route": None}) == "broken"
    assert make_router_edge(route_router).node_for({"action": "error", "route": None}) == "fallback"
    with pytest.raises(InvalidArgumentError, match="not a routing decision"):
        edge.node_for({"action": "route", "route": "NOPE"})
    for state in ({"msgs": [HumanMessage("hi")]}, {"messages": []}):
        with pytest.raises(InvalidArgumentError, match="has no 'messages' to route"):
            edge(state)
    with pytest.raises(InvalidArgumentError, match="last_n"):
        make_router_edge(route_router, last_n=0)
    with pytest.raises(InvalidArgumentError, match="run the router node first"):
        edge.after_node({"messages": []})
