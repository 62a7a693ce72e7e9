"""``routecore serve --static``: the static tier (issue 38, docs/static.md) in front of the transformer.

:class:`StaticTier` is what the sidecar serves then: a :class:`~routecore.routers.cascade.Cascade`
whose fast router embeds with a distilled table and whose strong router is the one ``serve`` would
serve without ``--static`` (same config, model, LLM fallback and lesson store). Routes go through
the cascade (``route``, ``route_batch``: micro-batches stay one batch call, the table's, then one
transformer batch of the queries it escalates), so every decision carries the cascade's ``cascade``
alert (``encoder_tier``: ``static`` or ``transformer``). Tool belts, tool sessions and lessons are
the transformer's router alone: on the catalogs measured the static shortlist saves no time and
loses recall (docs/static.md, MetaTool). ``/v1/learn`` is refused: a learned exemplar would reach
one of the two routers only.

Importing this module imports neither Starlette nor the routers.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from routecore.errors import ConfigError, ModelError

__all__ = ["StaticTier", "static_table"]


def static_table(model: Optional[str], static_model: Optional[str] = None) -> str:
    """The table ``--static`` loads: ``static_model`` (a folder or a name in the model cache), else
    ``<model>-static`` from the model cache (``model`` None: the bundled one).

    Raises:
        ModelError: no such table; the message names the command that builds it.
    """
    from routecore.hub import models

    if static_model is not None:
        models.resolve(static_model)  # a folder or a cached name, else ModelError
        return static_model
    from routecore.hub.distill import static_name

    name = static_name(models.resolve(model))
    if not (models.home() / "models" / name).is_dir():
        raise ModelError(
            f"no static table {name!r} in {models.home() / 'models'}: build it once with "
            f"`routecore models distill {model or 'multilingual-e5-small'}` (or give --static-model)"
        )
    return name


def check_static_args(static: bool, static_model: Optional[str], bundle: Optional[str]) -> None:
    """Refuse the combinations ``--static`` does not serve.

    Raises:
        ConfigError: ``--static`` with ``--bundle`` (a bundle holds one router, embedded by one
            encoder), or ``--static-model`` without ``--static``.
    """
    if static_model is not None and not static:
        raise ConfigError("--static-model names the table of --static: give --static too")
    if static and bundle is not None:
        raise ConfigError(
            "--static needs --config: a bundle holds one router embedded by one encoder, and the "
            "static tier builds a second one from the config"
        )


class StaticTier:
    """The router ``routecore serve --static`` serves (see the module docs): routes through
    ``cascade``, everything else through its strong (transformer) router."""

    def __init__(self, cascade: Any):
        self.cascade = cascade
        self.strong = cascade.strong

    def __repr__(self) -> str:
        return f"StaticTier(fast={self.cascade.fast.encoder!r}, strong={self.strong.encoder!r})"

    # -- routes: the cascade ----------------------------------------------------------
    def route(self, query: str, **kw: Any) -> Any:
        """:meth:`Cascade.route`: the table's decision at its high tier, else the transformer's."""
        return self.cascade.route(query, **kw)

    def route_batch(self, queries: Sequence[str], **kw: Any) -> list[Any]:
        """:meth:`Cascade.route_batch`: one batch of the table, one of the transformer for the rest."""
        return list(self.cascade.route_batch(queries, **kw))

    @property
    def served(self) -> dict[str, int]:
        """Decisions the table (``fast``) and the transformer (``strong``) gave so far."""
        return dict(self.cascade.served)

    # -- everything else: the transformer's router ---------------------------------------
    @property
    def encoder(self) -> Any:
        """The transformer's encoder (its query cache is what ``/metrics`` reports)."""
        return self.strong.encoder

    @property
    def llm(self) -> Any:
        """The LLM fallback, the strong router's only (the cascade's fast router has none)."""
        return self.strong.llm

    @property
    def route_specs(self) -> Any:
        return self.strong.route_specs

    @property
    def route_table(self) -> Any:
        return self.strong.route_table

    @property
    def memory(self) -> Any:
        return self.strong.memory

    def tools(self, query: str, **kw: Any) -> Any:
        return self.strong.tools(query, **kw)

    def tools_batch(self, queries: Sequence[str], **kw: Any) -> Any:
        return self.strong.tools_batch(queries, **kw)

    def tool_session(self, query: str, **kw: Any) -> Any:
        return self.strong.tool_session(query, **kw)

    def record_lesson(self, query: str, tool: str, **kw: Any) -> Any:
        return self.strong.record_lesson(query, tool, **kw)

    def learn(self, *args: Any, **kw: Any) -> Any:
        """Refused (``/v1/learn`` answers 422).

        Raises:
            ConfigError: always: a learned exemplar would reach one of the cascade's routers only.
        """
        raise ConfigError(
            "routecore serve --static does not learn: an exemplar learned by one tier would leave "
            "the other deciding without it; serve without --static to use /v1/learn"
        )


def static_tier(fast: Any, strong: Any) -> StaticTier:
    """``fast`` (the config's router on the static table) in front of ``strong`` (the transformer's),
    in a :class:`StaticTier`; the config's ``llm:`` section serves the strong router only."""
    from routecore.routers.cascade import Cascade

    fast.route_table.llm = None
    return StaticTier(Cascade(fast, strong))
