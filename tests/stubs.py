"""Crafted-vector encoder for testing the numeric rules of the router."""

from __future__ import annotations

import hashlib

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from routecore.core.encoder import EncodeOutput

DIM = 1024
FREE = 8  # axes 0..7 carry meaning; each mix() puts its remainder on its own axis >= 8


def unit(i: int) -> np.ndarray:
    v = np.zeros(DIM, np.float32)
    v[i] = 1
    return v


_next_free = [FREE]


def mix(**cos: float) -> np.ndarray:
    """A unit vector whose cosine to axis `aN` (N < 8) is the given value; the
    remainder goes to a fresh private axis, so two mixes share only what they name."""
    v = np.zeros(DIM, np.float32)
    for k, c in cos.items():
        v[int(k[1:])] = c
    rest = 1 - float((v**2).sum())
    assert rest >= -1e-6
    axis = _next_free[0]
    _next_free[0] = FREE + (axis + 1 - FREE) % (DIM - FREE)
    v[axis] = np.sqrt(max(rest, 0))
    return v


class StubEncoder:
    """Maps known texts to fixed vectors; counts calls; can be made to fail."""

    dim = DIM
    path = None

    def __init__(self, table: dict[str, np.ndarray], model_id: str = "stub:1"):
        self.table = dict(table)
        self.model_id = model_id
        self.calls = 0
        self.fail = False

    def encode_with_stats(self, texts, kind="query"):
        if self.fail:
            raise RuntimeError("encoder down")
        self.calls += 1
        rows = []
        for t in texts:
            if t in self.table:
                rows.append(self.table[t])
            else:
                h = int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)
                rows.append(np.random.default_rng(h).standard_normal(DIM).astype(np.float32))
        return EncodeOutput(np.stack(rows).astype(np.float32), (), 0.0, 0.0, 0)


# The numbers the rule tests below were written against (MiniLM's former
# defaults), pinned so that no calibration runs on crafted vectors: these tests
# check the rules' mechanics; tests/calibrate/test_calibration.py checks the calibration.
MANUAL = dict(
    temperature=0.05,
    high=0.85,
    margin=0.15,
    previous_high=0.70,
    previous_margin=0.10,
    medium=0.50,
    min_score=0.30,
    three_way_within=0.05,
    collision_gap=0.08,
    tool_threshold=0.0,
    anti_pattern_threshold=0.60,
    lesson_similarity=0.80,
    affinity_boost=1.15,
    affinity_penalty=0.70,
    lesson_boost=0.20,
    lexical_weight=0.0,
    tool_lexical_weight=0.0,
)


def it_ops_rules():
    from routecore.decide.policy import CLARIFY, BiasRule

    return (
        BiasRule("RAG", "GENERAL", "RAG", 0.05),
        BiasRule("RAG", "INCIDENT", CLARIFY, 0.05),
        BiasRule("INCIDENT", "GENERAL", "INCIDENT", 0.05),
    )


def manual(**kw):
    """A Policy with every calibrated key pinned (MANUAL) and the cosine softmax (no
    exemplar head: these numbers are cosine ones), then ``kw``."""
    from routecore.decide.policy import Policy

    return Policy(**{**MANUAL, "head": "off", **kw})


#: Any text for the contract properties: every code point, lone surrogates mixed in (st.characters()
#: leaves them out), and the words the crafted tables know.
SURROGATES = st.sampled_from(["\ud800", "\udfff", "\udc80", "\ud83d"])
ANY_TEXT = st.lists(
    st.one_of(st.characters(), SURROGATES, st.sampled_from(["a1", " ", "\n"])), max_size=12
).map("".join)
CONTRACT_PROPS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
