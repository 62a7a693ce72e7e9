"""Router's tool calls: the tool belt of a turn (:mod:`routecore.tools.toolbelt`), its batch and async
forms, per-turn sessions and experience lessons. A mixin of :class:`~routecore.routers.router.Router`,
which documents the class.
"""

from __future__ import annotations

from typing import Any, Sequence, TypeVar

from routecore.decide.arguments import context_domains_arg
from routecore.decision import ToolBelt
from routecore.errors import InvalidArgumentError
from routecore.routers.context_result import context_search
from routecore.tools.session import ToolSession
from routecore.tools.tool_catalog import ToolCatalog
from routecore.tools.toolbelt import select_tools, select_tools_batch

_T = TypeVar("_T")


class ToolCalls:
    """Router's methods over its tools."""

    tool_catalog: ToolCatalog

    def _emit(self, result: _T) -> _T:  # Router's: its metrics hook
        raise NotImplementedError

    def _emit_all(self, results: list[_T]) -> list[_T]:
        raise NotImplementedError

    def tools(
        self,
        query: str,
        *,
        context_domains: Sequence[str] = (),
        top_k: int | None = None,
        threshold: float | None = None,
        candidates: Sequence[str] | None = None,
        vector: Any = None,
        context: Any = None,
        context_domain: str | None = None,
    ) -> ToolBelt:
        """The tool belt for ``query``: core tools, the best matches, discovery tools.

        ``candidates`` limits this call to those tools (names from the catalog; nothing
        is re-embedded). ``vector``: the query's embedding, as in :meth:`route`.
        ``context`` (a :class:`routecore.routers.context.Context` of this query) builds the
        search from the context (:meth:`~routecore.routers.context.Context.search_text`: intent,
        domain, entities, task; the belt's ``query`` is that text), and its ``domain``
        layer's label is the active domain unless ``context_domains`` are given; ``vector`` does
        not go with it. ``context_domains``: the active domains (their tools get the affinity
        boost, their lessons apply), as in :meth:`route`; ``context_domain`` (one name) is
        deprecated. A router without tools answers with an empty belt."""
        domains = context_domains_arg(context_domains, context_domain, "context_domain")
        if context is not None:
            if vector is not None:
                raise InvalidArgumentError(
                    "tools(): give context= or vector=, not both (the context's search text is embedded)"
                )
            query, domains = context_search(context, domains)
        return self._emit(
            select_tools(
                self.tool_catalog,
                query,
                domains,
                top_k,
                threshold,
                candidates=candidates,
                vector=vector,
            )
        )

    def tools_batch(
        self,
        queries: Sequence[str],
        *,
        context_domains: Sequence[str] = (),
        top_k: int | None = None,
        threshold: float | None = None,
        candidates: Sequence[str] | None = None,
        vectors: Any = None,
        context_domain: str | None = None,
    ) -> list[ToolBelt]:
        """The tool belts for ``queries``, embedded in one batched encoder call (each as
        :meth:`tools` gives it; one ``context_domains`` for all)."""
        return self._emit_all(
            select_tools_batch(
                self.tool_catalog,
                queries,
                context_domains_arg(context_domains, context_domain, "context_domain"),
                top_k,
                threshold,
                vectors=vectors,
                candidates=candidates,
            )
        )

    async def atools(self, query: str, **kw: Any) -> ToolBelt:
        """:meth:`tools` off the event loop."""
        from routecore.core.aio import run_off_loop  # asyncio loads on the first async call

        return await run_off_loop(self.tools, None, query, **kw)

    async def atools_batch(self, queries: Sequence[str], **kw: Any) -> list[ToolBelt]:
        """:meth:`tools_batch` off the event loop."""
        from routecore.core.aio import run_off_loop  # asyncio loads on the first async call

        return await run_off_loop(self.tools_batch, None, queries, **kw)

    def discovery_tools(self, prefixes: tuple[str, ...]) -> dict[str, list[str]]:
        """Plugin -> its tools whose names start with one of ``prefixes`` (cached)."""
        return self.tool_catalog.discovery_tools(prefixes)

    def tool_session(
        self, query: str, *, context_domains: Sequence[str] = (), context_domain: str | None = None
    ) -> ToolSession:
        """A per-turn :class:`routecore.tools.session.ToolSession` (request_more_tools, breaker);
        ``context_domains`` as in :meth:`tools`."""
        return ToolSession(
            self.tool_catalog, query, context_domains_arg(context_domains, context_domain, "context_domain")
        )

    def record_lesson(self, query: str, tool: str, *, use: bool, context: str = "") -> int:
        """Remember a correction: for queries like ``query`` (in ``context``), (do not) use ``tool``."""
        return self.tool_catalog.record_lesson(query, tool, use=use, context=context)
