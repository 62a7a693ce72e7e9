"""The LLM tool router (issue 19): an LLM picks the tools from one-line summaries.

One chat-completions call to any OpenAI-compatible server. The prompt holds the
query and the one-line summary of every candidate tool (the two-level catalog:
:meth:`ToolSpec.summary`), and, as a hint, the semantic belt. The answer is JSON
inside ``<tool_selection>`` tags::

    <tool_selection>{"selected_tools": ["get_weather"], "complexity": "simple",
    "execution_strategy": "direct", "reasoning": "...", "confidence": 0.9}</tool_selection>

The parser is tolerant (no tags: the outermost braces; code fences; a bare list of
names). Unknown tool names are dropped and reported; an empty or unparseable answer,
a timeout or a server error falls back to the semantic belt, and the result says so.

Modes: ``llm`` (every tool's summary), ``hybrid`` (the semantic ranking narrows the
catalog to the best ``hybrid_top``, default 20, then the LLM chooses) and
``semantic`` (no LLM: the router's belt). The chosen tools' full schemas come back.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

from routecore.catalog import estimate_tokens
from routecore.decision import ToolBelt
from routecore.errors import ConfigError, LLMError

Mode = Literal["llm", "hybrid", "semantic"]
MODES = ("llm", "hybrid", "semantic")
COMPLEXITY = ("simple", "medium", "complex")
STRATEGIES = ("direct", "iterative", "parallel")
TAG = "tool_selection"


@dataclass(frozen=True)
class ToolRouting:
    """The tools chosen for a query, with the LLM's view of the task.

    ``source`` is ``llm`` when the LLM's (validated) answer chose the tools and
    ``semantic`` when the semantic belt did: in ``semantic`` mode, or as the
    fallback whose reason is ``fallback``. ``dropped``: names the LLM gave that are
    not candidates. ``schemas``: the chosen tools' full schemas."""

    tools: tuple[str, ...]
    schemas: tuple[dict[str, Any], ...]
    mode: str
    source: str
    complexity: str | None = None
    execution_strategy: str | None = None
    reasoning: str = ""
    confidence: float | None = None
    fallback: str | None = None
    dropped: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    #: Estimated tokens of the router prompt (summaries) and of every candidate's full schema.
    prompt_tokens: int = 0
    schema_tokens: int = 0
    llm_ms: float = 0.0
    belt: ToolBelt | None = field(default=None, repr=False)


def parse_selection(text: str) -> dict[str, Any]:
    """The JSON object of an answer: inside ``<tool_selection>`` tags when present, else
    the outermost braces; a bare JSON list is read as the selected tools.

    Raises:
        ValueError: nothing that parses as JSON.
    """
    m = re.search(rf"<{TAG}>(.*?)</{TAG}>", text, re.S | re.I)
    body = (m.group(1) if m else text).strip()
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", body.strip(), flags=re.I)
    for start, end in (("{", "}"), ("[", "]")):
        a, b = body.find(start), body.rfind(end)
        if a != -1 and b > a:
            try:
                got = json.loads(body[a : b + 1])
            except (json.JSONDecodeError, RecursionError):  # not JSON, or nested deeper than the stack
                continue
            return got if isinstance(got, dict) else {"selected_tools": got}
    raise ValueError("no JSON object or list in the answer")


class LLMToolRouter:
    """Tools for a query from an LLM, over a :class:`~routecore.router.Router`'s catalog.

    Args:
        router: the router whose tools (and semantic belt) are used.
        base_url, model, api_key, timeout, max_tokens: the OpenAI-compatible server
            (as :class:`routecore.llm.OpenAICompatibleRouter`); ``timeout`` bounds a call.
        mode: ``llm``, ``hybrid`` (default) or ``semantic``.
        hybrid_top: candidates kept by the semantic ranking in ``hybrid`` mode.
        hint: show the LLM the semantic belt's tools.
        client: an :class:`routecore.llm.OpenAICompatibleRouter` to use instead of
            ``base_url``, ``model``, ... (:meth:`from_config` passes the ``llm:`` section's).

    Raises:
        ConfigError: a bad mode or ``hybrid_top``, a router without tools, or a bad URL.
    """

    def __init__(
        self,
        router: Any,
        base_url: str | None = None,
        model: str = "",
        *,
        api_key: str | None = None,
        timeout: float = 10.0,
        mode: Mode = "hybrid",
        hybrid_top: int = 20,
        hint: bool = True,
        max_tokens: int | None = None,
        client: Any = None,
    ):
        if mode not in MODES:
            raise ConfigError(f"LLM tool router: mode must be one of {MODES}, got {mode!r}")
        if not (isinstance(hybrid_top, int) and hybrid_top >= 1):
            raise ConfigError(f"LLM tool router: hybrid_top must be an int >= 1, got {hybrid_top!r}")
        if not router.tool_specs:
            raise ConfigError("LLM tool router: the router has no tools")
        self.router, self.mode, self.hybrid_top, self.hint = router, mode, hybrid_top, hint
        self.client = client
        if mode != "semantic" and client is None:
            if not base_url:
                raise ConfigError(f"LLM tool router: mode {mode!r} needs base_url")
            from routecore.llm import OpenAICompatibleRouter

            self.client = OpenAICompatibleRouter(
                base_url, model, api_key=api_key, timeout=timeout, max_tokens=max_tokens
            )

    @classmethod
    def from_config(
        cls,
        path: str | os.PathLike[str],
        *,
        llm_url: str | None = None,
        llm_model: str | None = None,
        **kw: Any,
    ) -> "LLMToolRouter":
        """The tools of a config, its ``llm:`` server and its ``llm_tools:`` section (``mode``,
        ``hybrid_top``, ``hint``; see ``examples/llm_tools.yaml``). ``llm_url`` / ``llm_model``
        override the server's URL and model, as on the command line; ``kw`` go to the Router."""
        from routecore import config_schema
        from routecore.llm import llm_from_config
        from routecore.router import Router
        from routecore.specs import read_config_file

        data = read_config_file(path)
        cfg = config_schema.convert(data.get("llm_tools") or {}, config_schema.LLMTools, f"{path}: llm_tools")
        client = None
        if cfg.mode != "semantic":
            client = llm_from_config(data.get("llm"), str(path), base_url=llm_url, model=llm_model)
            if client is None:
                raise ConfigError(
                    f"{path}: llm_tools: mode {cfg.mode!r} needs an 'llm:' section (the server)"
                )
        # One client for both: the router's LLM fallback (its routes, if any) and the tool choice.
        router = Router.from_config(path, llm=client, llm_url=llm_url, llm_model=llm_model, **kw)
        return cls(router, mode=cfg.mode, hybrid_top=cfg.hybrid_top, hint=cfg.hint, client=client)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()

    def messages(self, query: str, candidates: Sequence[Any], belt: ToolBelt | None) -> list[dict[str, str]]:
        """The chat messages of one call: the candidates' summaries, the answer format, the hint."""
        lines = "\n".join(t.summary() for t in candidates)
        hint = (
            f"\nA semantic search suggests: {', '.join(belt.names)}."
            if self.hint and belt is not None and belt.names
            else ""
        )
        system = (
            "You choose the tools an agent needs for the user's request, from this catalog (name: summary):\n"
            f"{lines}\n{hint}\n"
            f'Answer with JSON inside <{TAG}></{TAG}> tags: {{"selected_tools": [names from the catalog, possibly none], '
            f'"complexity": one of {list(COMPLEXITY)}, "execution_strategy": one of {list(STRATEGIES)}, '
            '"reasoning": one sentence, "confidence": a number from 0 to 1}.'
        )
        return [{"role": "system", "content": system}, {"role": "user", "content": query}]

    def select(self, query: str, *, top_k: int | None = None) -> ToolRouting:
        """The tools for ``query`` (at most ``top_k``, default the policy's ``tool_top_k``)."""
        k = top_k or self.router.policy.tool_top_k
        specs = self.router.tool_specs
        if self.mode == "semantic" or self.client is None:
            return self._semantic(self.router.tools(query, top_k=k), "semantic", None, specs)
        vec = self.router.encoder.encode_with_stats([query]).embeddings[
            0
        ]  # one encode for the belt and the ranking
        belt = self.router.tools(query, top_k=k, vector=vec)
        if self.mode == "hybrid":
            ranked = self.router.tools(
                query, top_k=min(self.hybrid_top, len(specs)), threshold=0.0, vector=vec
            ).names
            by_name = {t.name: t for t in specs}
            candidates = [by_name[n] for n in ranked if n in by_name]
        else:
            candidates = list(specs)
        msgs = self.messages(query, candidates, belt)
        prompt_tokens = estimate_tokens(msgs[0]["content"] + msgs[1]["content"])
        schema_tokens = estimate_tokens(json.dumps([t.schema() for t in candidates]))
        t0 = time.perf_counter()
        try:
            content = self._ask(msgs)
            answer = parse_selection(content)
        except (LLMError, ValueError) as e:
            ms = (time.perf_counter() - t0) * 1e3
            return self._semantic(
                belt, self.mode, f"{type(e).__name__}: {e}", specs, prompt_tokens, schema_tokens, ms
            )
        ms = (time.perf_counter() - t0) * 1e3
        return self._validated(answer, candidates, belt, k, prompt_tokens, schema_tokens, ms)

    def _ask(self, msgs: list[dict[str, str]]) -> str:
        """The assistant's text of one call (LLMError on transport, status or shape)."""
        c = self.client
        assert c is not None
        body: dict[str, Any] = {"model": c.model, "temperature": c.temperature, "messages": msgs}
        if c.max_tokens is not None:
            body["max_tokens"] = c.max_tokens
        raw = c.post(body)
        try:
            content = json.loads(raw)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError, RecursionError):
            raise LLMError("the LLM answer is not a chat completion with a message") from None
        if not isinstance(content, str) or not content.strip():
            raise LLMError("the LLM answered nothing")
        return content

    def _validated(
        self,
        answer: dict[str, Any],
        candidates: Sequence[Any],
        belt: ToolBelt,
        k: int,
        prompt_tokens: int,
        schema_tokens: int,
        ms: float,
    ) -> ToolRouting:
        names = answer.get("selected_tools")
        if not isinstance(names, list):
            return self._semantic(
                belt,
                self.mode,
                "the answer has no selected_tools list",
                self.router.tool_specs,
                prompt_tokens,
                schema_tokens,
                ms,
            )
        known = {t.name: t for t in candidates}
        chosen = list(dict.fromkeys(n for n in names if isinstance(n, str) and n in known))[:k]
        dropped = tuple(str(n) for n in names if not (isinstance(n, str) and n in known))
        notes = []
        complexity, strategy = answer.get("complexity"), answer.get("execution_strategy")
        if complexity not in COMPLEXITY:
            notes.append(f"complexity {complexity!r} is not one of {COMPLEXITY}")
            complexity = None
        if strategy not in STRATEGIES:
            notes.append(f"execution_strategy {strategy!r} is not one of {STRATEGIES}")
            strategy = None
        conf = answer.get("confidence")
        conf = (
            float(conf)
            if isinstance(conf, (int, float)) and not isinstance(conf, bool) and 0 <= conf <= 1
            else None
        )
        if not chosen and names:
            return self._semantic(
                belt,
                self.mode,
                f"every tool the LLM named is unknown: {list(dropped)}",
                self.router.tool_specs,
                prompt_tokens,
                schema_tokens,
                ms,
                dropped,
            )
        reasoning = answer.get("reasoning")
        return ToolRouting(
            tuple(chosen),
            tuple(known[n].schema() for n in chosen),
            self.mode,
            "llm",
            complexity,
            strategy,
            reasoning if isinstance(reasoning, str) else "",
            conf,
            None,
            dropped,
            tuple(notes),
            prompt_tokens,
            schema_tokens,
            ms,
            belt,
        )

    @staticmethod
    def _semantic(
        belt: ToolBelt,
        mode: str,
        why: str | None,
        specs: Sequence[Any],
        prompt_tokens: int = 0,
        schema_tokens: int = 0,
        ms: float = 0.0,
        dropped: tuple[str, ...] = (),
    ) -> ToolRouting:
        by_name = {t.name: t for t in specs}
        names = tuple(n for n in belt.names if n in by_name)
        return ToolRouting(
            names,
            tuple(by_name[n].schema() for n in names),
            mode,
            "semantic",
            fallback=why,
            dropped=dropped,
            prompt_tokens=prompt_tokens,
            schema_tokens=schema_tokens,
            llm_ms=ms,
            belt=belt,
        )
