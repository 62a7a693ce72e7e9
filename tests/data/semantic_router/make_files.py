"""Write semantic-router 1.x route configs with semantic-router's own saving API.

Run: ``python tests/data/semantic_router/make_files.py [OUT_DIR]`` (default: this
folder). Needs ``semantic-router==1.1.1`` (the ``peer`` extra); no network, no
model download, no API key.

The routers are built in code and saved with ``router.to_json`` / ``router.to_yaml``
(``semantic_router.config.save_router``). An :class:`IndexedRouter` embeds its
utterances when it is built, so :class:`CohereEncoder` (a class a file can name; it
builds its client without a network call, unlike ``OpenAIEncoder``, which fetches a
tiktoken vocabulary) is given a dummy key and, in this process only, a deterministic
offline embedding in place of the API; the saved file holds only the encoder's type
and name.
The decision model is built with a dummy key and never called (saving does not).

The 1.x ``Route`` has no ``function_schemas`` field (0.x had one), so the function
schema of a Python function, made by pydantic, rides in the route's ``metadata``.

Outputs: ``sr1_indexed.json``, ``sr1_indexed.yaml`` (an indexed router with per-route
and router-level ``confidence_threshold``), ``sr1_decision.yaml`` (a decision router:
descriptions only) and ``sr1_chain.json`` (a chain of an indexed and a decision router).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any, List

HERE = Path(__file__).resolve().parent


def get_weather(city: str, unit: str = "celsius") -> str:
    """Current weather in a city."""
    return f"sunny in {city} ({unit})"


def function_schema(fn: Any) -> dict[str, Any]:
    """OpenAI-style function schema of ``fn`` (its parameters from pydantic)."""
    from pydantic import TypeAdapter

    params = TypeAdapter(fn).json_schema()
    params.pop("additionalProperties", None)
    return {
        "type": "function",
        "function": {"name": fn.__name__, "description": (fn.__doc__ or "").strip(), "parameters": params},
    }


def _offline_embed(self: Any, docs: List[Any], **kwargs: Any) -> List[List[float]]:
    """A stand-in for the OpenAI API: 16 unit-length floats from each text's hash."""
    out = []
    for d in docs:
        h = hashlib.sha256(str(d).encode("utf-8")).digest()[:16]
        v = [b - 127.5 for b in h]
        n = sum(x * x for x in v) ** 0.5
        out.append([x / n for x in v])
    return out


def routes() -> list[Any]:
    """The routes every file holds: utterances, descriptions, thresholds, metadata."""
    from semantic_router.route import Route

    return [
        Route(
            name="weather",
            utterances=["what's the weather in Paris", "will it rain tomorrow", "is it cold outside"],
            description="Questions about the weather forecast.",
            confidence_threshold=0.42,
            metadata={"function_schemas": [function_schema(get_weather)], "owner": "tools-team"},
        ),
        Route(
            name="chitchat", utterances=["how are you today", "lovely weather, isn't it", "tell me a joke"]
        ),
        Route(
            name="politics",
            utterances=["who will win the élection", "what do you think of the président"],
            description="Politique et élections — refuse politely.",
            confidence_threshold=0.6,
            metadata={"tags": ["guardrail", "refuse"], "priority": 2},
        ),
    ]


def _indexed(threshold: float | None) -> Any:
    from semantic_router.encoders import CohereEncoder
    from semantic_router.routers import IndexedRouter

    for method in ("__call__", "encode_documents", "encode_queries"):  # this process only
        setattr(CohereEncoder, method, _offline_embed)
    enc = CohereEncoder(name="embed-multilingual-v3.0", cohere_api_key="offline-not-used")
    return IndexedRouter(
        encoder=enc, routes=routes(), top_k=5, aggregation="mean", confidence_threshold=threshold
    )


def _decision() -> Any:
    from semantic_router.decision_models import TypeSafeDecisionModel
    from semantic_router.route import Route
    from semantic_router.routers import DecisionRouter

    model = TypeSafeDecisionModel(api_key="offline-not-used")
    described = [
        Route(
            name=r.name,
            description=r.description or "Small talk.",
            confidence_threshold=0.7 if r.name == "weather" else None,
            metadata=r.metadata,
        )
        for r in routes()
    ]
    return DecisionRouter(model=model, routes=described, confidence_threshold=0.5)


def make_files(out_dir: str | Path = HERE) -> list[Path]:
    """Write the fixture files into ``out_dir`` with semantic-router's saving API; their paths."""
    from semantic_router.routers import Chain

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    indexed = _indexed(0.3)
    written = []
    for name, router, save in [
        ("sr1_indexed.json", indexed, "to_json"),
        ("sr1_indexed.yaml", indexed, "to_yaml"),
        ("sr1_decision.yaml", _decision(), "to_yaml"),
        ("sr1_chain.json", Chain([_indexed(None), _decision()], confidence_threshold=0.5), "to_json"),
    ]:
        getattr(router, save)(out / name)
        written.append(out / name)
    return written


if __name__ == "__main__":
    for p in make_files(sys.argv[1] if len(sys.argv) > 1 else HERE):
        print(p)
