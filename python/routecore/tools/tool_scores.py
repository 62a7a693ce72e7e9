"""A query's tool scores before a belt is picked from them: the native step (cosines, lexical
bias, domain affinity) with the anti-pattern penalty, the experience lessons' verdicts and the
entity preferences and requirements applied (:func:`ranked_scores`)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from routecore.core.entities import entity_effects
from routecore.decide.arguments import scored_domains
from routecore.decide.policy import affinity_scale, resolved
from routecore.decide.tables import Step
from routecore.decision import Alert
from routecore.errors import RoutecoreError
from routecore.memory.lesson_cache import store_key
from routecore.tools.tool_catalog import ToolCatalog


def ranked_scores(
    catalog: ToolCatalog,
    q: np.ndarray,
    context_domains: Sequence[str],
    exact_top: int,
    floor: float,
    alerts: list[Alert],
    text: str = "",
) -> tuple[Step, np.ndarray, bool, bool]:
    """The native step's output (``raw``, ``bound``: 0 when exact, ``collision``),
    the final scores (affinity, anti-patterns, lessons), whether a lesson banned
    a tool (-inf) and whether anti-patterns or lessons changed any score. An
    unusable experience memory adds an alert to ``alerts``; the belt is then
    built without lessons.

    With int8 tables, the best ``exact_top`` tools, every tool that may reach
    ``floor`` and every tool an anti-pattern or a lesson touches are scored
    exactly, and ``exact_top`` grows by the number of demoted tools: so the best
    ``exact_top`` tools by final score are exact too.
    """
    p = catalog.policy
    # Affinity reads the domains some tool belongs to (lessons read every one: they are kept per domain).
    active, set_aside = scored_domains(context_domains, catalog.tools.known_domains, "tool")
    alerts.extend(Alert(kind, said + "; lessons still read them") for kind, said in set_aside)
    names = catalog.tools.names
    hit = None
    if len(catalog.anti.texts):
        anti_threshold = resolved(p.anti_pattern_threshold, "anti_pattern_threshold")
        anti = catalog.anti.score(
            q, p, [], 0, aggregation="max", exact_floor=anti_threshold, probabilities=False
        ).raw
        hit = anti >= anti_threshold
    lessons: list[tuple[int, bool]] = []
    if catalog.memory is not None:
        floor -= resolved(p.lesson_boost, "lesson_boost")  # a lesson can lift a tool over the floor
        similarity = resolved(p.lesson_similarity, "lesson_similarity")
        try:
            stored = catalog.memory.lessons(store_key(catalog.encoder), q.shape[0])
            # One verdict per tool, however many lessons match: a "do not use" wins.
            verdicts = stored.verdicts(q, similarity, context_domains)
            if catalog.memory.skipped:
                alerts.append(
                    Alert(
                        "memory_error",
                        f"{catalog.memory.skipped} lessons skipped: their embedding is not {q.shape[0]} wide",
                    )
                )
        except RoutecoreError as e:
            alerts.append(Alert("memory_error", f"lessons not applied: {e}"))
            verdicts = {}
        pos = catalog.tools.pos
        lessons = sorted((pos[t], use) for t, use in verdicts.items() if t in pos)
    demoted = hit.nonzero()[0].tolist() if hit is not None else []
    exact = [names[j] for j in demoted] + [names[j] for j, _ in lessons]
    lex = catalog.lexical_bias(text)
    bias, lexical = lex if lex is not None else (None, None)  # code order (the step's), spec order
    found = catalog.entities.find(text) if catalog.entities is not None and text else ()
    required_missing = False
    if catalog.entity_tools:  # entity preferences and requirements, as for routes
        boost = (
            p.entity_boost if p.entity_boost is not None else resolved(p.three_way_within, "three_way_within")
        )
        eb, _ = entity_effects(catalog.specs, {e.kind for e in found}, boost)
        if eb is not None:
            bias = eb if lexical is None else lexical + eb
            required_missing = bool(np.isneginf(eb).any())
    r = catalog.tools.score(
        q,
        p,
        active,
        0,
        exact_top=exact_top + len(demoted),
        exact_floor=floor,
        probabilities=False,
        exact=exact,
        bias=bias,
    )
    r.lexical, r.entities = lexical, tuple(found)
    adjusted = r.adjusted  # a fresh array (or a view of one): ours to modify
    banned = catalog.without_exemplars or required_missing  # such tools score -inf
    if demoted:
        adjusted[demoted] = affinity_scale(adjusted[demoted], p.anti_pattern_penalty)  # any sign: never up
    for j, use_it in lessons:
        adjusted[j] = adjusted[j] + p.lesson_boost if use_it else -np.inf
        banned = banned or not use_it
    return r, adjusted, banned, bool(lessons or demoted)
