"""What rebuilding a router's tables takes: :class:`Rebuild`, the parameter struct that a live update
(:mod:`routecore.updates.live`) and a learning refit (:mod:`routecore.updates.learning_update`) hand
to the router's ``internals.build`` (:func:`routecore.routers.assembly.rebuild`); and
:class:`Changeable`, what those modules read and set on the router they change."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

import numpy as np

from routecore.config.specs import RouteSpec, ToolSpec
from routecore.decide.tables import EncoderLike, KnownVectors, known_vectors

if TYPE_CHECKING:
    from routecore.calibrate.calibration_record import Calibration
    from routecore.calibrate.linear_head import LinearHead
    from routecore.decide.policy import Policy
    from routecore.llm.llm import LLMRouter
    from routecore.memory.memory import ExperienceMemory
    from routecore.tools.tool_catalog import ToolCatalog


class Changeable(Protocol):
    """A :class:`routecore.routers.router.Router` as the modules that change it while it serves see it
    (``updates/`` sits below ``routers/``, so they name no router class): its public parts, and
    ``internals`` (:class:`routecore.routers.router_internals.RouterInternals`)."""

    calibration: Calibration | None
    spec_policy: Policy
    internals: Any
    route_table: Any

    @property
    def tool_catalog(self) -> ToolCatalog: ...
    @property
    def encoder(self) -> EncoderLike: ...
    @property
    def memory(self) -> ExperienceMemory | None: ...


@dataclass(frozen=True)
class Rebuild:
    """The specs of the new tables and how to build them.

    ``known``: embeddings by text to reuse (only texts it lacks are embedded); ``head``: the head to
    keep (None: train the exemplar head again); ``head_threshold``: the exemplar head's out-of-scope
    cut to keep with ``calibration``'s tiers; ``answers``: (best probability, right) of answered
    queries the router did not route, which lower the routing cut (a learning refit)."""

    routes: tuple[RouteSpec, ...]
    tools: tuple[ToolSpec, ...]
    encoder: EncoderLike
    spec_policy: Policy
    llm: LLMRouter | None
    memory: ExperienceMemory | None
    head: LinearHead | None
    storage: str
    calibration: Calibration | None
    known: KnownVectors
    head_threshold: float | None
    answers: tuple[np.ndarray, np.ndarray] | None = None


def rebuild_of(
    router: Changeable,
    routes: Sequence[RouteSpec],
    tools: Sequence[ToolSpec],
    spec_policy: Policy,
    head: LinearHead | None,
    calibration: Calibration | None,
    head_threshold: float | None,
    routes_known: Mapping[str, np.ndarray],
) -> Rebuild:
    """The :class:`Rebuild` of ``router``'s tables over ``routes`` and ``tools``: its encoder, LLM, memory
    and storage, the tools' and anti-patterns' vectors it has, and ``routes_known`` (text -> vector)
    for the routes'."""
    tc = router.tool_catalog
    return Rebuild(
        routes=tuple(routes),
        tools=tuple(tools),
        encoder=router.encoder,
        spec_policy=spec_policy,
        llm=router.route_table.llm,
        memory=tc.memory,
        head=head,
        storage=router.internals.storage,
        calibration=calibration,
        known=KnownVectors(routes_known, known_vectors(tc.tools), known_vectors(tc.anti)),
        head_threshold=head_threshold,
    )
