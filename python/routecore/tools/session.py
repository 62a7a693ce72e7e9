"""One turn's tool belt and the ``request_more_tools`` meta tool, with its circuit breaker."""

from __future__ import annotations

from typing import Sequence

from routecore.decision import Alert, Reason, ToolChoice, trace
from routecore.errors import InvalidArgumentError
from routecore.tools.catalog import MORE_TOOLS, Catalog, build_catalog
from routecore.tools.tool_catalog import ToolCatalog
from routecore.tools.toolbelt import select_tools


class ToolSession:
    """One turn's tool belt plus the ``request_more_tools`` meta tool.

    Each call returns the next best tools not yet offered. After
    ``policy.more_tools_limit`` calls (default 3) the circuit breaker removes the
    meta tool from the belt and adds an alert.
    """

    def __init__(self, catalog: ToolCatalog, query: str, context_domains: Sequence[str] = ()):
        self.tool_catalog, self.query, self.context_domains = catalog, query, tuple(context_domains)
        self.belt = select_tools(catalog, query, self.context_domains, None, None)
        self.calls = 0
        self.alerts: list[Alert] = list(self.belt.alerts)
        self.offered = set(self.belt.names)

    @property
    def tool_names(self) -> list[str]:
        """Names in the belt, with the meta tool while the breaker is closed."""
        extra = [MORE_TOOLS] if self.calls < self.tool_catalog.policy.more_tools_limit else []
        return sorted(self.offered) + extra

    def catalog(self) -> Catalog:
        """One-line summaries of every tool, and the full schemas of the belt's tools
        plus the meta tool's while the breaker is closed, for the LLM's request."""
        return build_catalog(self.tool_catalog.specs, self.tool_names)

    def request_more_tools(self, query: str | None = None) -> list[ToolChoice]:
        """The next best tools not yet offered (for ``query``, default the turn's); [] once the
        breaker is open. A call with a bad argument raises and counts for nothing."""
        if query is not None and not isinstance(query, str):
            raise InvalidArgumentError(f"{MORE_TOOLS}: query must be a str or None, got {query!r}")
        limit = self.tool_catalog.policy.more_tools_limit
        if self.calls >= limit:
            return []
        self.calls += 1
        more = select_tools(
            self.tool_catalog,
            query or self.query,
            self.context_domains,
            self.tool_catalog.policy.more_tools_batch,
            None,
            exclude=self.offered,
        )
        new = [
            ToolChoice(
                t.name,
                t.domain,
                t.score,
                t.raw_score,
                Reason("more", f"request_more_tools: {t.reason.message}"),
            )
            for t in more.tools
            if t.name not in self.offered
        ]
        self.offered.update(t.name for t in new)
        if self.calls >= limit:
            self.alerts.append(
                trace(
                    "tool session",
                    Alert(
                        "circuit_breaker",
                        f"{MORE_TOOLS} was called {limit} times this turn and is now disabled; "
                        "answer with the tools you have.",
                    ),
                )
            )
        return trace(f"{MORE_TOOLS} call {self.calls}", new)
