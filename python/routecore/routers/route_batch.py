"""The batch path of a route table (:meth:`BatchRoutes.route_batch`): one encoder call for the
queries, one native step that reads the exemplar table once for all of them
(:meth:`BatchRoutes.scored_batch`), then each query's decision."""

from __future__ import annotations

import time
from concurrent.futures import Executor
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from routecore.decide.arguments import (
    context_domains_arg,
    per_query,
    previous_query_arg,
    query_vectors,
    scored_domains,
)
from routecore.decide.conversation import tail_of
from routecore.decide.route_decide import peers_of
from routecore.decide.route_outcomes import Chooser
from routecore.decide.tables import EncoderLike, ScoreTable, Step, score_batch
from routecore.decision import Decision, trace
from routecore.errors import InvalidArgumentError, RoutecoreError
from routecore.llm.llm import no_llm
from routecore.routers.prepared import Prepared, with_notes
from routecore.routers.readings import (
    asks_llm,
    follow_up,
    joined_text,
    plus_time,
    read_as_typed_too,
    second_reading,
    surer_reading,
)


class _Table(Protocol):
    """What the batch path reads of its route table (:class:`routecore.routers.route_table.RouteTable`)."""

    encoder: EncoderLike
    table: ScoreTable

    def read_query(self, text: str, repair: bool = True) -> tuple[str, tuple[tuple[str, str], ...]]: ...

    def query_text(self, query: Any, previous: str | None, clarify: Decision | None) -> str: ...

    def known_previous(self, previous: Any) -> str | None: ...

    # route(), decide() and with_tail() as RouteTable defines them (their arguments are the table's)
    @property
    def route(self) -> Callable[..., Decision]: ...

    def empty(self, text: str, previous: str | None) -> Decision: ...

    def prepare(
        self, text: str, q: np.ndarray, previous: str | None = None, clarify: Decision | None = None
    ) -> Prepared: ...

    def step(self, prepared: Prepared, context_domains: Sequence[str] = ()) -> Any: ...

    @property
    def decide(self) -> Callable[..., Decision]: ...

    @property
    def with_tail(self) -> Callable[..., Decision]: ...

    @property
    def route_batch(self) -> Callable[..., list[Decision]]: ...

    def in_context_batch(
        self, queries: list[str], follows: list[str | None], call: Call
    ) -> list[Decision]: ...

    def scored_batch(
        self, texts: list[str], embs: np.ndarray, prev: list[str | None], context_domains: Sequence[str]
    ) -> dict[int, tuple[Prepared, Step, float]]: ...


@dataclass(frozen=True)
class Call:
    """The arguments of a batch call besides its queries (one per query where they may differ)."""

    previous: list[str | None]
    context_domains: Sequence[str]
    vectors: Any
    executor: Executor | None
    choose: Chooser | None
    peers: list[Decision | None]
    peer_model: str | None
    repair: bool

    def kw(self, choose: Any, rows: list[int] | None = None, peered: bool = False) -> dict[str, Any]:
        """``route_batch`` keywords for the queries at ``rows`` (all when None): the query's own
        vectors and peers only when ``peered`` (a joined text is read anew)."""
        pick = (lambda xs: xs) if rows is None else (lambda xs: [xs[i] for i in rows])
        out: dict[str, Any] = dict(
            previous=pick(self.previous),
            context_domains=self.context_domains,
            choose=choose,
            executor=self.executor,
            repair=self.repair,
        )
        if peered:
            vecs = None if self.vectors is None else np.asarray(self.vectors)
            out["vectors"] = None if vecs is None else (vecs if rows is None else vecs[rows])
            out["peer"] = pick(self.peers) if any(p is not None for p in self.peers) else None
            out["peer_model"] = self.peer_model
        return out


class BatchRoutes:
    """:meth:`route_batch` of a route table (a mixin of
    :class:`~routecore.routers.route_table.RouteTable`)."""

    def route_batch(
        self: _Table,
        queries: Sequence[str],
        *,
        previous: str | Sequence[str | None] | None = None,
        context_domains: Sequence[str] = (),
        vectors: Any = None,
        choose: Chooser | None = None,
        executor: Executor | None = None,
        peer: Sequence[Decision | None] | None = None,
        peer_model: str | None = None,
        repair: bool = True,
        previous_query: str | Sequence[str | None] | None = None,
    ) -> list[Decision]:
        """The decisions for ``queries`` from one batched encoder call
        (:meth:`routecore.routers.router.Router.route_batch`).

        With an ``executor`` the decisions after the encoder call run in its threads,
        so that the LLM calls of several undecided queries overlap. ``repair`` False reads the
        queries as typed; otherwise those whose typos were repaired are read as typed too
        (one more batched call), as ``route()`` reads them (``RouteTable.with_typed``); those with a
        ``previous_query`` as ``route()`` reads them (:meth:`in_context_batch`)."""
        if isinstance(queries, str):
            raise InvalidArgumentError("queries must be a list of strings; use route() for one query")
        queries = list(queries)
        follows = [previous_query_arg(t) for t in per_query(previous_query, len(queries), "previous_query")]
        prev = [self.known_previous(p) for p in per_query(previous, len(queries), "previous")]
        peers = peers_of(peer, len(queries), peer_model)
        if any(follows):
            vectors = None if vectors is None else query_vectors(vectors, self.encoder.dim, len(queries))
            call = Call(prev, context_domains, vectors, executor, choose, peers, peer_model, repair)
            return self.in_context_batch(queries, follows, call)
        known = self.table.known_domains
        context_domains, set_aside = scored_domains(context_domains_arg(context_domains), known)
        heads = [self.read_query(self.query_text(q, p, None), repair) for q, p in zip(queries, prev)]
        texts, notes = [h[0] for h in heads], [h[1] + set_aside for h in heads]
        if not texts:
            return []
        t0 = time.perf_counter()
        if vectors is not None:
            embs = query_vectors(vectors, self.encoder.dim, len(texts))
            tok_ms, truncated = 0.0, ()
        else:
            try:
                enc = self.encoder.encode_with_stats(texts)
            except Exception:  # noqa: BLE001 - each query degrades on its own (the LLM, or an error decision)
                alone = partial(
                    self.route, context_domains=context_domains, choose=choose, peer_model=peer_model
                )
                return [alone(q, previous=p, peer=c) for q, p, c in zip(queries, prev, peers)]
            embs, tok_ms, truncated = enc.embeddings, enc.tokenize_ms, enc.truncated
        t1 = time.perf_counter()
        share = (t1 - t0) / len(texts)  # each decision reports its share of the batch's encoder call
        scored = self.scored_batch(texts, embs, prev, context_domains)

        def one(i: int) -> Decision:
            if not texts[i]:
                return trace("route decision", with_notes(self.empty(texts[i], prev[i]), notes[i]))
            pp, r, step_s = scored.get(i, (None, None, 0.0))
            began = time.perf_counter() - step_s  # its share of the batch's step, as its own step time
            pp = pp._replace(t1=began) if pp is not None else None
            d = self.decide(
                texts[i],
                embs[i],
                prev[i],
                context_domains,
                None,
                began - share,
                tok_ms / len(texts),
                i in truncated,
                choose,
                prepared=pp,
                scored=r,
                peer=peers[i],
                peer_model=peer_model,
            )
            return with_notes(d, notes[i])

        out = (
            list(executor.map(one, range(len(texts))))
            if executor is not None
            else [one(i) for i in range(len(texts))]
        )
        if vectors is None:  # a long query is read on its end too, as route() reads it (rare: one at a time)
            typed = []
            for i, q in enumerate(queries):
                tail = tail_of(q) if peers[i] is None else None
                if tail is not None and texts[i]:
                    out[i] = self.with_tail(q, tail, out[i], prev[i], context_domains, choose)
                elif tail is None and peers[i] is None and read_as_typed_too(out[i], notes[i]):
                    typed.append(i)
            if typed:  # queries whose typos were repaired, read as typed too (one batched call)
                again = self.route_batch(
                    [queries[i] for i in typed],
                    previous=[prev[i] for i in typed],
                    context_domains=context_domains,
                    choose=no_llm,
                    repair=False,
                )
                for i, d in zip(typed, again):
                    out[i] = surer_reading(out[i], d)
        return out

    def in_context_batch(
        self: _Table, queries: list[str], follows: list[str | None], call: Call
    ) -> list[Decision]:
        """The decisions of queries that follow a previous turn's text (``follows``; ``route(q,
        previous_query=)`` is a batch of one): each read alone without the LLM; one not routed, after
        that text too (:func:`~routecore.routers.readings.follow_up`), the LLM asked on the joined text
        when that reading would ask it; the rest as alone, the LLM asked where it would be."""
        c = call
        alone = self.route_batch(queries, **c.kw(no_llm, peered=True))
        out = list(alone)
        todo = [i for i, d in enumerate(alone) if follows[i] and d.action != "route" and queries[i].strip()]
        texts = {i: t for i in todo if (t := joined_text(follows[i] or "", queries[i])) is not None}
        todo = list(texts)
        joined = self.route_batch([texts[i] for i in todo], **c.kw(no_llm, rows=todo)) if todo else []
        ask_joined: dict[int, Decision] = {}
        for i, j in zip(todo, joined):
            f = follow_up(alone[i], j)
            if f is not None and asks_llm(j):
                ask_joined[i] = j  # the LLM reads the query after the previous turn
            elif f is not None:
                out[i] = f
        if ask_joined:
            rows = list(ask_joined)
            again = self.route_batch([texts[i] for i in rows], **c.kw(c.choose, rows=rows))
            for i, d in zip(rows, again):
                said = "read after the previous turn, with the LLM"
                out[i] = plus_time(second_reading(alone[i], d, "follow_up", said), ask_joined[i])
        asked = [i for i, d in enumerate(out) if d is alone[i] and asks_llm(d)]
        if asked:  # decided as they would be alone: the LLM asked (their encodes are cache hits)
            again = self.route_batch([queries[i] for i in asked], **c.kw(c.choose, rows=asked, peered=True))
            for i, d in zip(asked, again):
                out[i] = plus_time(d, alone[i])
        return out

    def scored_batch(
        self: _Table,
        texts: list[str],
        embs: np.ndarray,
        prev: list[str | None],
        context_domains: Sequence[str],
    ) -> dict[int, tuple[Prepared, Step, float]]:
        """Each readable query's preparation and native step, the steps in one native call that reads
        the exemplar table once for the batch, with each query's share of that time; empty for fewer
        than two, or when the batch call fails (each query is then scored on its own, and fails alone)."""
        live = [i for i, t in enumerate(texts) if t]
        if len(live) < 2:
            return {}
        t = time.perf_counter()
        preps = [self.prepare(texts[i], embs[i], prev[i]) for i in live]
        try:
            steps = score_batch(
                self.table,
                embs[live],
                [self.step(pp, context_domains) for pp in preps],
                [pp.pre.bias for pp in preps],
            )
        except RoutecoreError:
            return {}
        each = (time.perf_counter() - t) / len(live)
        return {i: (pp, r, each) for i, pp, r in zip(live, preps, steps)}
