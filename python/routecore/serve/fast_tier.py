"""``routecore serve --fast-model NAME`` / ``--static``: a faster encoder in front of the model.

:class:`FastTier` is what the sidecar serves then: a :class:`~routecore.routers.cascade.Cascade`
whose fast router embeds with the fast encoder and whose strong router is the one ``serve`` would
serve without it (same config, model, LLM fallback and lesson store). The fast encoder is another
model (``--fast-model``: MiniLM in front of the bundled e5, whose escalated queries are decided on
both heads against the cuts measured for the pair, docs/calibration.md) or the model's distilled
static table (``--static``, issue 38, docs/static.md). Routes go through the cascade (``route``,
``route_batch``: micro-batches stay one batch call of the fast router, then one of the strong router
for the queries it escalates), so every decision carries the cascade's ``cascade`` alert
(``served_by``: ``fast`` or ``strong``; ``encoder_tier``: ``static`` or ``transformer``). Tool belts
are the cascade's, with no shortlist (its default: on the catalogs measured a static shortlist saves
no time and loses recall, docs/static.md, MetaTool): the strong router's belt with the cascade's
alert. Tool sessions and lessons are the strong router's. ``/v1/learn`` is refused: a learned
exemplar would reach one of the two routers only.

Importing this module imports neither Starlette nor the routers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

from routecore.errors import ConfigError, ModelError

if TYPE_CHECKING:
    from routecore.decision import Decision, ToolBelt
    from routecore.routers.cascade import Cascade

__all__ = ["FastTier", "check_fast_args", "fast_encoder_name", "fast_tier"]


def fast_encoder_name(model: Optional[str], static: bool, fast_model: Optional[str]) -> str:
    """The encoder in front of ``model`` (None: the bundled one): ``fast_model`` (a folder or a name
    in the model cache), else (``static``) the model's table ``<model>-static`` from the model cache.

    Raises:
        ModelError: no such encoder or table; for a missing table the message names the command
            that builds it.
    """
    from routecore.hub import models

    if fast_model is not None:
        models.resolve(fast_model)  # a folder or a cached name, else ModelError
        return fast_model
    from routecore.hub.distill import static_name

    name = static_name(models.resolve(model))
    if not (models.home() / "models" / name).is_dir():
        raise ModelError(
            f"no static table {name!r} in {models.home() / 'models'}: build it once with "
            f"`routecore models distill {model or 'multilingual-e5-small'}` (or give --fast-model)"
        )
    return name


def check_fast_args(static: bool, fast_model: Optional[str], bundle: Optional[str]) -> None:
    """Refuse the combinations a fast tier does not serve.

    Raises:
        ConfigError: ``--static`` with ``--fast-model`` (two fast tiers), or either with ``--bundle``
            (a bundle holds one router, embedded by one encoder).
    """
    if static and fast_model is not None:
        raise ConfigError(
            "--static and --fast-model both name the fast tier: --static is the model's own table, "
            "--fast-model any other encoder or table; give one"
        )
    if (static or fast_model is not None) and bundle is not None:
        flag = "--static" if static else "--fast-model"
        raise ConfigError(
            f"{flag} needs --config: a bundle holds one router embedded by one encoder, and the fast "
            "tier builds a second one from the config"
        )


class FastTier:
    """The router ``routecore serve --fast-model`` / ``--static`` serves (see the module docs): routes
    through ``cascade``, everything else through its strong router."""

    def __init__(self, cascade: Cascade):
        self.cascade = cascade
        self.strong = cascade.strong

    def __repr__(self) -> str:
        return f"FastTier(fast={self.cascade.fast.encoder!r}, strong={self.strong.encoder!r})"

    # -- routes: the cascade ----------------------------------------------------------
    def route(self, query: str, **kw: Any) -> Decision:
        """:meth:`Cascade.route`: the fast router's decision at its high tier, else the strong one's."""
        return self.cascade.route(query, **kw)

    def route_batch(self, queries: Sequence[str], **kw: Any) -> list[Decision]:
        """:meth:`Cascade.route_batch`: one batch of the fast router, one of the strong for the rest."""
        return list(self.cascade.route_batch(queries, **kw))

    async def aroute(self, query: str, **kw: Any) -> Decision:
        """:meth:`Cascade.aroute`: :meth:`route` off the event loop."""
        return await self.cascade.aroute(query, **kw)

    async def aroute_batch(self, queries: Sequence[str], **kw: Any) -> list[Decision]:
        """:meth:`Cascade.aroute_batch`: :meth:`route_batch` off the event loop."""
        return list(await self.cascade.aroute_batch(queries, **kw))

    @property
    def served(self) -> dict[str, int]:
        """Decisions the fast and the strong router gave so far."""
        return dict(self.cascade.served)

    # -- everything else: the strong router ----------------------------------------------
    @property
    def encoder(self) -> Any:
        """The strong router's encoder (its query cache is what ``/metrics`` reports)."""
        return self.strong.encoder

    @property
    def llm(self) -> Any:
        """:attr:`Cascade.llm`: the strong router's."""
        return self.cascade.llm

    @property
    def route_specs(self) -> Any:
        return self.strong.route_specs

    @property
    def route_table(self) -> Any:
        return self.strong.route_table

    @property
    def memory(self) -> Any:
        return self.cascade.memory

    def tools(self, query: str, **kw: Any) -> ToolBelt:
        """:meth:`Cascade.tools`: the strong router's belt (no shortlist: see the module docs)."""
        return self.cascade.tools(query, **kw)

    def tools_batch(self, queries: Sequence[str], **kw: Any) -> list[ToolBelt]:
        return self.cascade.tools_batch(queries, **kw)

    async def atools(self, query: str, **kw: Any) -> ToolBelt:
        return await self.cascade.atools(query, **kw)

    async def atools_batch(self, queries: Sequence[str], **kw: Any) -> list[ToolBelt]:
        return await self.cascade.atools_batch(queries, **kw)

    def tool_session(self, query: str, **kw: Any) -> Any:
        return self.cascade.tool_session(query, **kw)

    def record_lesson(self, query: str, tool: str, **kw: Any) -> Any:
        return self.cascade.record_lesson(query, tool, **kw)

    def learned(self, route: str | None = None) -> list[Any]:
        """None: a fast tier does not learn (:meth:`learn`)."""
        return []

    def held_for_review(self) -> list[Any]:
        """None: a fast tier does not learn (:meth:`learn`)."""
        return []

    def forget(self, ids: Any) -> Any:
        """Refused as :meth:`learn` is: nothing was learned.

        Raises:
            ConfigError: always.
        """
        raise _no_learning()

    def learn(self, *args: Any, **kw: Any) -> Any:
        """Refused, as :meth:`Cascade.learn` is (``/v1/learn`` answers 422).

        Raises:
            ConfigError: always: a learned exemplar would reach one of the cascade's routers only.
        """
        raise _no_learning()


def _no_learning() -> ConfigError:
    """Why a fast tier neither learns nor forgets: a cascade's reason, with what to do instead."""
    from routecore.routers.cascade_tools import NO_LEARNING

    return ConfigError(
        f"routecore serve with a fast tier (--fast-model, --static): {NO_LEARNING}; serve without it to use "
        "/v1/learn"
    )


def fast_tier(fast: Any, strong: Any) -> FastTier:
    """``fast`` (the config's router on the fast encoder) in front of ``strong``, in a
    :class:`FastTier`; the config's ``llm:`` section serves the strong router only. The cascade
    combines the two heads where routecore has cuts for the pair (``Cascade(combine=None)``)."""
    from routecore.routers.cascade import Cascade

    fast.route_table.llm = None
    return FastTier(Cascade(fast, strong))
