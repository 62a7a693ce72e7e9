"""Typing test (issue 16 §2): user code of the public API, checked by mypy, never run.

``tests/test_typing.py`` runs ``python -m mypy`` (strict, ``mypy.ini``) on this file and the
package. ``assert_type`` pins the types the API promises; the one ``type: ignore`` below must
stay needed (strict mode reports unused ignores), so the protocol keeps rejecting non-encoders.
"""

from __future__ import annotations

import asyncio
from typing import Any, Mapping, Sequence  # noqa: F401 - Any: in assert_type strings

import numpy as np
from typing_extensions import assert_type

import routecore
from routecore import Encoder, Policy, Router, RouteSpec, ToolSpec
from routecore.core.encoder import EncodeOutput
from routecore.decide.tables import EncoderLike, embed_texts
from routecore.decision import Alert, Decision, ToolBelt, ToolChoice  # noqa: F401 - in assert_type strings


def needs_encoder(encoder: EncoderLike) -> int:
    return encoder.dim


class MyEncoder:
    """A user's own encoder: what EncoderLike asks for, nothing more."""

    @property
    def dim(self) -> int:
        return 4

    @property
    def model_id(self) -> str:
        return "mine:0"

    def encode_with_stats(self, texts: Sequence[str], kind: str = "query") -> EncodeOutput:
        n = len(texts)
        return EncodeOutput(np.ones((n, 4), np.float32), (), 0.0, 0.0, 0)


ROUTES = [
    RouteSpec("billing", ("refund my order", "invoice question"), domain="finance"),
    RouteSpec("support", ("the app crashes", "cannot log in")),
]
TOOLS = [ToolSpec("get_invoice", "Fetch an invoice by id", domain="finance")]


def build() -> Router:
    enc = Encoder.load()
    assert_type(enc, Encoder)
    # The library's own Encoder is an EncoderLike (issue 16 §2: the protocol used to reject it).
    needs_encoder(enc)
    needs_encoder(routecore.Encoder.load())
    needs_encoder(MyEncoder())
    needs_encoder(object())  # type: ignore[arg-type]
    like: EncoderLike = enc
    assert_type(embed_texts(like, ["hello"]), np.ndarray)
    assert_type(enc.encode(["hello"]), np.ndarray)
    router = Router(ROUTES, TOOLS, encoder=Encoder.load(), policy=Policy(tool_top_k=3))
    Router(ROUTES, encoder=MyEncoder())
    return router


def read_decision(d: Decision) -> tuple[str | None, float]:
    assert_type(d.action, str)
    assert_type(d.route, "str | None")
    assert_type(d.tier, str)
    assert_type(d.probabilities, Mapping[str, float])
    assert_type(d.alerts, "tuple[Alert, ...]")
    assert_type(d.collision, bool)
    assert_type(d.to_dict(), "dict[str, Any]")
    return d.route, d.confidence


def read_belt(belt: ToolBelt) -> list[str]:
    assert_type(belt.tools, "tuple[ToolChoice, ...]")
    assert_type(belt.names, "list[str]")
    assert_type(belt.scores, Mapping[str, float])
    assert_type(belt.no_tool, bool)
    return [t.name for t in belt.tools if t.score >= 0.0]


def sync_use(router: Router) -> None:
    d = router.route("I want a refund", previous="support", context_domains=["finance"])
    assert_type(d, Decision)
    read_decision(d)
    batch = router.route_batch(["refund", "crash"], previous=[None, "billing"])
    assert_type(batch, "list[Decision]")
    read_belt(router.tools("show me invoice 42", top_k=2))


async def async_use(router: Router) -> str | None:
    d = await router.aroute("I want a refund")
    assert_type(d, Decision)
    ds = await router.aroute_batch(["refund", "crash"])
    assert_type(ds, "list[Decision]")
    belt = await router.atools("show me invoice 42")
    assert_type(belt, ToolBelt)
    return d.route


def main() -> None:
    router = build()
    sync_use(router)
    print(asyncio.run(async_use(router)))
