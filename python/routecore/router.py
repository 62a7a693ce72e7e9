"""`Router`: routes and tool belts from one user turn, with a confidence policy."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

from routecore import _native
from routecore.decision import Alert, Decision, Exemplar, ScoreMap, Timings, ToolBelt, trace
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.index import VectorIndex
from routecore.llm import LLMRequest, LLMRouter
from routecore.memory import ExperienceMemory
from routecore.policy import CLARIFY, Policy, apply_previous_boost, bias_winner, tier_of
from routecore.specs import RouteSpec, ToolSpec, check_thresholds, parse_routes, parse_tools, read_config_file
from routecore.toolbelt import ToolSession, select_tools

BUNDLE_VERSION = 1


class EncoderLike(Protocol):
    """What the router needs of an encoder (``routecore.Encoder`` fits)."""

    dim: int
    model_id: str

    def encode_with_stats(self, texts: Sequence[str], kind: str = "query") -> Any: ...


#: ``storage="auto"`` keeps tables of at least this many elements (rows x dim) as int8.
AUTO_INT8_ELEMENTS = 1 << 18


class _Table:
    """An index of exemplars whose labels are the names of `specs` (routes or tools)."""

    def __init__(self, names: list[str], domains: list[str], texts: list[str], owners: list[int], vectors: np.ndarray | None, dim: int, storage: str):
        self.names, self.domains, self.texts = names, domains, texts
        if storage == "auto":
            storage = "int8" if len(texts) * dim >= AUTO_INT8_ELEMENTS else "f32"
        self.storage = storage
        self.index = VectorIndex(dim, backend="flat", storage=storage)
        if len(texts):
            self.index.add(np.arange(len(texts)), vectors, [names[o] for o in owners], [domains[o] for o in owners])
        label_names = self.labels = self.index.label_names()
        self.pos = {n: i for i, n in enumerate(names)}
        code_of = {n: i for i, n in enumerate(label_names)}
        codes = np.array([code_of.get(n, 0) for n in names], dtype=np.int64)
        # Names interned in spec order (code 0 is the empty label): a slice, not a gather.
        self.codes: np.ndarray | slice = slice(1, len(names) + 1) if np.array_equal(codes, np.arange(1, len(names) + 1)) else codes
        dom = {d: i for i, d in enumerate(sorted(set(domains)))}
        self.domain_ids = np.array([dom[d] for d in domains], dtype=np.uint32)

    def score(self, q: np.ndarray, policy: Policy, active: list[str], top: int, aggregation: str | None = None,
              exact_top: int | None = None, exact_floor: float = float("inf"), probabilities: bool = True,
              exact: Sequence[str] = ()) -> dict[str, Any]:
        """One native step; per-route arrays come back in spec order."""
        r = self.index._impl.score_routes(q, aggregation or policy.aggregation, policy.top_n, policy.temperature, active,
                                          policy.affinity_boost, policy.affinity_penalty, policy.collision_gap, top,
                                          exact_top or policy.exact_top, policy.exact_band, exact_floor, probabilities, list(exact))
        c = self.codes
        r["raw"], r["adjusted"], r["bound"] = r["raw"][c], r["adjusted"][c], r["bound"][c]
        if probabilities:
            r["probs"] = r["probs"][c]
        return r


def _embed(encoder: EncoderLike, texts: list[str], batch: int = 64) -> np.ndarray:
    if not texts:
        return np.zeros((0, encoder.dim), dtype=np.float32)
    return np.concatenate([encoder.encode_with_stats(texts[i:i + batch]).embeddings for i in range(0, len(texts), batch)])


def _exemplars(specs: Sequence[Any], attr: str = "exemplars") -> tuple[list[str], list[int]]:
    texts, owners = [], []
    for i, s in enumerate(specs):
        for t in getattr(s, attr)() if callable(getattr(s, attr)) else getattr(s, attr):
            texts.append(t)
            owners.append(i)
    return texts, owners


class Router:
    """Semantic router over routes and tools.

    Args:
        routes, tools: specifications (see :mod:`routecore.specs`).
        encoder: defaults to the bundled model (``Encoder.load()``).
        policy: every threshold and default (:class:`routecore.policy.Policy`).
        llm: optional fallback router (:class:`routecore.llm.LLMRouter`).
        memory: optional :class:`ExperienceMemory` whose lessons adjust tool scores.
        storage: ``"auto"`` (default: int8 for tables of >= ``AUTO_INT8_ELEMENTS``
            elements, f32 below), ``"f32"``, ``"f16"`` or ``"int8"``. An int8 table is
            scanned in int8 and its contenders re-scored exactly (``Policy.exact_top``,
            ``exact_band``); routes outside them keep an estimate whose error bound is
            in ``Decision.score_bounds``.
    """

    def __init__(self, routes: Sequence[RouteSpec] = (), tools: Sequence[ToolSpec] = (), *, encoder: EncoderLike | None = None,
                 policy: Policy | None = None, llm: LLMRouter | None = None, memory: ExperienceMemory | None = None,
                 head: Any = None, storage: str = "auto", _vectors: dict[str, np.ndarray] | None = None):
        if not routes and not tools:
            raise ConfigError("a router needs at least one route or tool")
        if encoder is None:
            from routecore.encoder import Encoder

            encoder = Encoder.load()
        self.route_specs, self.tool_specs = list(routes), list(tools)
        self.encoder, self.policy, self.llm, self.memory = encoder, policy or Policy(), llm, memory
        self.head = head  # optional evaluation.head.LinearHead: route probabilities and out of scope
        self.fitted: dict[str, Any] = {}  # calibration results (routecore fit), saved in bundles
        self._route_by_name = {r.name: r for r in self.route_specs}
        self._tool_by_name = {t.name: t for t in self.tool_specs}
        self._tool_pos = {t.name: i for i, t in enumerate(self.tool_specs)}
        self._core_tools = [i for i, t in enumerate(self.tool_specs) if t.core]
        self._tool_domains = [t.domain for t in self.tool_specs]
        self._tools_without_exemplars = any(not t.exemplars() for t in self.tool_specs)
        self._discovery: dict[tuple[str, ...], dict[str, list[str]]] = {}
        unknown = set(self.policy.per_route) - set(self._route_by_name)
        if unknown:
            raise ConfigError(f"policy.per_route names unknown routes {sorted(unknown)}")
        # The routes' own overrides, under those of the policy (explicit or fitted).
        spec_th = {r.name: check_thresholds(f"route {r.name!r}", r.thresholds) for r in self.route_specs if r.thresholds}
        if spec_th:
            per = self.policy.per_route
            merged = {n: {**spec_th.get(n, {}), **dict(per.get(n, {}))} for n in {**spec_th, **per}}
            self.policy = self.policy.with_overrides(per_route=merged)
        vec = _vectors or {}
        dim = encoder.dim
        rt, ro = _exemplars(self.route_specs)
        tt, to = _exemplars(self.tool_specs)
        at, ao = _exemplars(self.tool_specs, "anti_patterns")
        rn, rd = [r.name for r in self.route_specs], [r.domain for r in self.route_specs]
        tn, td = [t.name for t in self.tool_specs], [t.domain for t in self.tool_specs]
        v = {k: vec[k] if k in vec else _embed(encoder, texts) for k, texts in (("routes", rt), ("tools", tt), ("anti", at))}
        self._routes = _Table(rn, rd, rt, ro, v["routes"], dim, storage)
        self._tools = _Table(tn, td, tt, to, v["tools"], dim, storage)
        self._anti = _Table(tn, td, at, ao, v["anti"], dim, storage)

    # -- construction -------------------------------------------------------------
    @classmethod
    def from_config(cls, path: str | os.PathLike[str], **kw: Any) -> "Router":
        """Load routes, tools and an optional ``policy`` mapping from YAML or JSON."""
        data = read_config_file(path)
        unknown = set(data) - {"routes", "tools", "policy"}
        if unknown:
            raise ConfigError(f"{path}: unknown top-level keys {sorted(unknown)}")
        routes, tools = parse_routes(data), parse_tools(data)
        if not routes and not tools:
            raise ConfigError(f"{path}: no routes and no tools")
        policy = kw.pop("policy", None) or Policy.from_dict(data.get("policy"))
        return cls(routes, tools, policy=policy, **kw)

    # -- routes -------------------------------------------------------------------
    def fallback_chain(self, route: str) -> tuple[str, ...]:
        """``route`` and the routes reached by following ``fallback_on_error``."""
        chain, cur = [], route
        while cur and cur in self._route_by_name and cur not in chain:
            chain.append(cur)
            cur = self._route_by_name[cur].fallback_on_error
        return tuple(chain)

    def route(self, query: str, *, previous: str | None = None, context_domains: Sequence[str] = (), clarify: Decision | None = None) -> Decision:
        """Decide which route handles ``query``. Never raises for any query string.

        Args:
            previous: the route of the previous turn (multi-turn prior).
            context_domains: active domains (affinity boost/penalty).
            clarify: a previous CLARIFY decision this query answers; routing is
                then limited to its candidates, on the original query plus the answer.
        """
        if not self.route_specs:
            raise ConfigError("this router has no routes")
        if previous is not None and previous not in self._route_by_name:
            raise InvalidArgumentError(f"unknown previous route {previous!r}; known: {sorted(self._route_by_name)}")
        if not isinstance(query, str):
            raise InvalidArgumentError(f"query must be a str, got {type(query).__name__}")
        text = f"{clarify.query}\n{query}" if clarify is not None else query
        t0 = time.perf_counter()
        try:
            enc = self.encoder.encode_with_stats([text])
        except Exception as e:  # noqa: BLE001 - degrade to the LLM, never crash
            return trace("route decision", self._degraded(text, previous, e, t0))
        t1 = time.perf_counter()
        p = self.policy
        # The previous route and the clarified candidates may be lifted above the best routes: keep them exact.
        exact = ([previous] if previous else []) + (list(clarify.candidates) if clarify is not None else [])
        r = self._routes.score(enc.embeddings[0], p, list(context_domains), p.top_exemplars, exact=exact)
        t2 = time.perf_counter()
        if self.head is not None:
            self._apply_head(r, enc.embeddings[0])
        d = self._decide(text, r, previous, clarify)
        t3 = time.perf_counter()
        llm_ms = d.pop("_llm_ms", 0.0)
        timings = Timings(enc.tokenize_ms, (t1 - t0) * 1e3 - enc.tokenize_ms, (t2 - t1) * 1e3, (t3 - t2) * 1e3 - llm_ms, llm_ms, (t3 - t0) * 1e3)
        alerts = list(d.pop("alerts"))
        if enc.truncated:
            alerts.append(Alert("truncated", "the query was truncated at the model's max_length"))
        dec = Decision(**d, alerts=tuple(alerts), timings=timings, query=text, previous_route=previous, error_message=self.policy.error_message)
        return trace("route decision", dec)

    def _apply_head(self, r: dict[str, Any], q: np.ndarray) -> None:
        """Replace softmax probabilities by the linear head's (O(routes x dim))."""
        p = self.head.proba(q)[0]
        cls = {c: i for i, c in enumerate(self.head.classes)}
        probs = np.array([p[cls[n]] if n in cls else 0.0 for n in self._routes.names], dtype=np.float64)
        oos = float(p[cls[self.head.oos_class]]) if self.head.oos_class in cls else 0.0
        total = probs.sum()
        r["probs"] = (probs / total if total > 0 else np.full(len(probs), 1 / len(probs))).astype(np.float32)
        r["head_oos"] = oos >= probs.max() or probs.max() < self.head.threshold

    def _decide(self, text: str, r: dict[str, Any], previous: str | None, clarify: Decision | None) -> dict[str, Any]:
        p, names = self.policy, self._routes.names
        raw, adjusted, probs = r["raw"], r["adjusted"], r["probs"]
        if clarify is not None and clarify.candidates:
            keep = np.isin(np.array(names), list(clarify.candidates))
            adjusted = np.where(keep, adjusted, -np.inf).astype(np.float32)
            probs = _native.softmax(adjusted, p.temperature)
        prev_i = names.index(previous) if previous else None
        if p.previous_strategy == "boost":
            probs = apply_previous_boost(probs, prev_i, p.previous_boost)
        # The decision reads the best three routes only (ties to the lower index).
        top_p, order = _native.topk(probs, min(3, len(probs)))
        top_p, order = top_p.tolist(), order.tolist()
        top_adj = [adjusted.item(i) for i in order]  # no fancy indexing: it is slow on cold caches
        best = order[0]
        bname = names[best]
        p1 = top_p[0]
        p2 = top_p[1] if len(order) > 1 else 0.0
        high, margin_th, medium, min_score = p.thresholds(bname, prev_i == best and p.previous_strategy == "thresholds")
        tier = tier_of(p1, p1 - p2, high, margin_th, medium)
        labels, pos, texts = self._routes.labels, self._routes.pos, self._routes.texts
        out: dict[str, Any] = {
            "route": bname, "tier": tier, "confidence": p1, "margin": p1 - p2,
            "probabilities": ScoreMap(names, probs, pos), "raw_scores": ScoreMap(names, raw, pos),
            "adjusted_scores": ScoreMap(names, adjusted, pos), "score_bounds": ScoreMap(names, r["bound"], pos),
            "top_exemplars": tuple(Exemplar(labels[c], texts[i], s) for i, c, s in zip(r["top_ids"].tolist(), r["top_labels"].tolist(), r["top_scores"].tolist())),
            "alerts": [], "action": "route", "candidates": (), "_llm_ms": 0.0,
        }
        if r.get("head_oos") or float(raw[best]) < min_score:
            out.update(action="none", route=None, tier="low")
            return self._finish(out)
        if r["collision"] is not None and clarify is None:
            c = r["collision"]
            out["alerts"].append(self._collision_alert(labels[c[0]], labels[c[1]], c[2], self._routes, "route"))
        rule = bias_winner(names, order, top_adj, p) if tier != "high" else None
        if rule:
            winner, text_rule = rule
            out["bias_rule"] = text_rule
            if winner == CLARIFY:
                return self._finish(self._clarify(out, [names[i] for i, v in zip(order, top_adj) if v > -np.inf][:3 if "three-way" in text_rule else 2]))
            out["route"] = winner
            return self._finish(out)
        if tier == "high":
            return self._finish(out)
        if tier == "medium":
            out["hint"] = bname
            return self._finish(self._ask_llm(text, out, previous) if self.llm else out)
        if p.low_action == "llm" and self.llm:
            return self._finish(self._ask_llm(text, out, previous))
        if p.low_action == "none":
            out.update(action="none", route=None)
            return self._finish(out)
        return self._finish(self._clarify(out, [names[i] for i in order[:2]]))

    def _finish(self, out: dict[str, Any]) -> dict[str, Any]:
        out["fallback_chain"] = self.fallback_chain(out["route"]) if out.get("route") else ()
        return out

    def _clarify(self, out: dict[str, Any], candidates: list[str]) -> dict[str, Any]:
        desc = [self._route_by_name[c].description or c for c in candidates]
        q = "Do you mean: " + " or ".join(f"{d} ({c})" for c, d in zip(candidates, desc)) + "?"
        out.update(action="clarify", route=CLARIFY, candidates=tuple(candidates), question=q)
        return out

    def _ask_llm(self, text: str, out: dict[str, Any], previous: str | None) -> dict[str, Any]:
        req = LLMRequest(text, [(r.name, r.description) for r in self.route_specs], out["adjusted_scores"], previous,
                         [f"{b.a} vs {b.b} within {b.within}: {b.winner}" for b in self.policy.bias_rules], out.get("hint"))
        t = time.perf_counter()
        try:
            choice = self.llm.choose(req)  # type: ignore[union-attr]
            out["used_llm"] = True
            if choice.route == CLARIFY:
                order = sorted(out["probabilities"], key=lambda n: -out["probabilities"][n])
                self._clarify(out, order[:2])
            else:
                out.update(route=choice.route, action="route")
        except Exception as e:  # noqa: BLE001 - any LLM failure falls back to semantics
            out["fallback"] = f"llm failed ({type(e).__name__}: {e}); used the best semantic route"
            out["alerts"].append(Alert("fallback", out["fallback"]))
            out.update(action="route")
        out["_llm_ms"] = (time.perf_counter() - t) * 1e3
        return out

    def _degraded(self, text: str, previous: str | None, err: Exception, t0: float) -> Decision:
        base: dict[str, Any] = {"probabilities": {}, "raw_scores": {}, "adjusted_scores": {}, "confidence": 0.0, "margin": 0.0, "tier": "low"}
        alerts = [Alert("encoder_error", f"encoder failed: {type(err).__name__}: {err}")]
        if self.llm is not None:
            try:
                req = LLMRequest(text, [(r.name, r.description) for r in self.route_specs], {}, previous)
                choice = self.llm.choose(req)
                return Decision(action="clarify" if choice.route == CLARIFY else "route", route=choice.route, used_llm=True,
                                fallback="encoder failed; routed by the LLM", alerts=tuple(alerts), query=text, previous_route=previous,
                                fallback_chain=self.fallback_chain(choice.route), error_message=self.policy.error_message, timings=Timings(total=(time.perf_counter() - t0) * 1e3), **base)
            except Exception as e2:  # noqa: BLE001
                alerts.append(Alert("llm_error", f"LLM failed too: {type(e2).__name__}: {e2}"))
        return Decision(action="error", route=None, fallback="encoder failed and no LLM router could answer", alerts=tuple(alerts),
                        error_message=self.policy.error_message,
                        query=text, previous_route=previous, timings=Timings(total=(time.perf_counter() - t0) * 1e3), **base)

    @staticmethod
    def _collision_alert(a: str, b: str, gap: float, table: _Table, what: str) -> Alert:
        da, db = table.domains[table.pos[a]], table.domains[table.pos[b]]
        msg = (f"Ambiguity alert: the {what}s '{a}' (domain '{da}') and '{b}' (domain '{db}') are within {gap:.3f} of each other. "
               f"Check which domain the user means before using '{a}'; if the request is about '{db}', use '{b}'.")
        return Alert("collision", msg, {"first": a, "second": b, "gap": float(gap), "domains": [da, db]})

    # -- tools ----------------------------------------------------------------------
    def tools(self, query: str, *, context_domain: str | None = None, top_k: int | None = None, threshold: float | None = None) -> ToolBelt:
        """The tool belt for ``query``: core tools, the best matches, discovery tools."""
        return select_tools(self, query, context_domain, top_k, threshold)

    def discovery_tools(self, prefixes: tuple[str, ...]) -> dict[str, list[str]]:
        """Plugin -> its tools whose names start with one of ``prefixes`` (cached)."""
        if prefixes not in self._discovery:
            by: dict[str, list[str]] = {}
            for t in self.tool_specs:
                if t.domain and t.name.startswith(prefixes):
                    by.setdefault(t.domain, []).append(t.name)
            self._discovery[prefixes] = by
        return self._discovery[prefixes]

    def tool_session(self, query: str, *, context_domain: str | None = None) -> ToolSession:
        """A per-turn :class:`routecore.toolbelt.ToolSession` (request_more_tools, breaker)."""
        return ToolSession(self, query, context_domain)

    def record_lesson(self, query: str, tool: str, *, use: bool, context: str = "") -> int:
        """Remember a correction: for queries like ``query`` (in ``context``), (do not) use ``tool``."""
        if self.memory is None:
            raise ConfigError("this router has no experience memory")
        if tool not in self._tool_by_name:
            raise InvalidArgumentError(f"unknown tool {tool!r}")
        emb = self.encoder.encode_with_stats([query]).embeddings[0]
        return self.memory.record(query, tool, use=use, embedding=emb, model_id=self.encoder.model_id, context=context)

    # -- bundles --------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str], *, fitted: dict[str, Any] | None = None) -> None:
        """Write config + embeddings + model id as a bundle folder (loads without re-embedding)."""
        from dataclasses import asdict

        d = Path(path)
        d.mkdir(parents=True, exist_ok=True)
        for name, table in (("routes", self._routes), ("tools", self._tools), ("anti", self._anti)):
            table.index.save(d / f"{name}.rci")
        meta = {"version": BUNDLE_VERSION, "model_id": self.encoder.model_id, "model_path": str(getattr(self.encoder, "path", "")),
                "policy": self.policy.to_dict(), "routes": [asdict(r) for r in self.route_specs], "tools": [asdict(t) for t in self.tool_specs],
                "fitted": fitted or {}}
        if self.head is not None:
            self.head.save(d / "head.npz")
            meta["head"] = "head.npz"
        tmp = d / "bundle.json.tmp"
        tmp.write_text(json.dumps(meta, indent=1, ensure_ascii=False))
        os.replace(tmp, d / "bundle.json")

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, encoder: EncoderLike | None = None, **kw: Any) -> "Router":
        """Load a bundle; refuses it when ``encoder`` is not the model it was made with."""
        d = Path(path)
        try:
            meta = json.loads((d / "bundle.json").read_text())
        except (OSError, ValueError) as e:
            raise ConfigError(f"{d} is not a router bundle: {e}") from None
        if meta.get("version") != BUNDLE_VERSION:
            raise ConfigError(f"bundle version {meta.get('version')} is not supported (expected {BUNDLE_VERSION})")
        if encoder is None:
            from routecore.encoder import Encoder

            mp = meta.get("model_path")
            encoder = Encoder.load(mp if mp and Path(mp).is_dir() else None)
        if encoder.model_id != meta["model_id"]:
            raise ConfigError(f"bundle was made with model {meta['model_id']}, but the encoder is {encoder.model_id}; rebuild the bundle")
        vecs = {}
        for name in ("routes", "tools", "anti"):
            ix = VectorIndex.load(d / f"{name}.rci")
            vecs[name] = ix.vectors()[1] if len(ix) else np.zeros((0, encoder.dim), np.float32)
        routes = parse_routes({"routes": meta["routes"]})
        tools = parse_tools({"tools": meta["tools"]})
        policy = kw.pop("policy", None) or Policy.from_dict(meta["policy"])
        if meta.get("head") and "head" not in kw:
            from routecore.evaluation.head import LinearHead

            kw["head"] = LinearHead.load(d / meta["head"])
        r = cls(routes, tools, encoder=encoder, policy=policy, _vectors=vecs, **kw)
        r.fitted = meta.get("fitted", {})
        return r

