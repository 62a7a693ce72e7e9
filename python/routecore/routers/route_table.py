"""`RouteTable`: the routes of a router and the whole route decision.

Holds the route specs, their :class:`~routecore.decide.tables.ScoreTable`, the
optional linear head and LLM fallback, and turns one query into a
:class:`~routecore.decision.Decision`: scoring, the confidence tiers, bias
rules, clarification, the LLM fallback and the degraded (encoder failed) path.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from routecore.calibrate.calibration_record import Calibration
from routecore.calibrate.languages import LanguageDetector, language_alert
from routecore.calibrate.peer_cut import PeerCut
from routecore.calibrate.traffic import TrafficCut, for_table
from routecore.config.specs import RouteSpec
from routecore.core.entities import EntityMatcher, entity_effects
from routecore.core.lexical import LexicalTable
from routecore.decide.arguments import (
    clarify_arg,
    context_domains_arg,
    known_route,
    previous_query_arg,
    query_vectors,
    scored_domains,
)
from routecore.decide.conversation import read_query, tail_of
from routecore.decide.language_policies import LanguagePolicies
from routecore.decide.policy import Policy, resolved
from routecore.decide.route_decide import Decider, check_peer
from routecore.decide.route_outcomes import Chooser
from routecore.decide.spelling import Speller, tokenizer_words
from routecore.decide.tables import (
    EncoderLike,
    Step,
    build_table,
)
from routecore.decision import Alert, Decision, Timings, trace
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.llm.llm import LLMRouter, no_llm
from routecore.routers.prepared import Prepared, PreScore, with_notes
from routecore.routers.readings import read_as_typed_too, second_reading, sureness, surer_reading
from routecore.routers.route_batch import BatchRoutes


class RouteTable(Decider, BatchRoutes):
    """The routes of a router and the decision of which one handles a query.

    Args:
        routes: the route specifications.
        encoder: embeds the exemplars (unless ``vectors`` are given) and the queries.
        policy: thresholds and defaults, used as given (a Router merges the routes' own in first:
            :func:`~routecore.decide.policy.with_route_thresholds`).
        llm: optional fallback router, asked on medium (and, per policy, low) confidence.
        head: optional ``routecore.calibrate.linear_head.LinearHead`` (route probabilities and out of scope).
        storage: the table's storage (see :class:`~routecore.decide.tables.ScoreTable`).
        vectors: precomputed exemplar embeddings (from a bundle).
        lexical: the BM25 table of the same exemplars (hybrid scoring, ``policy.lexical_weight``).
    """

    def __init__(
        self,
        routes: Sequence[RouteSpec],
        *,
        encoder: EncoderLike,
        policy: Policy,
        llm: LLMRouter | None = None,
        head: Any = None,
        storage: str = "auto",
        vectors: np.ndarray | None = None,
        lexical: LexicalTable | None = None,
    ):
        self.specs = list(routes)
        self.by_name = {r.name: r for r in self.specs}
        self.encoder, self.policy, self.llm, self.head, self.lexical = encoder, policy, llm, head, lexical
        self.calibrated = "manual"  # where the policy's numbers come from (Router sets it)
        self.calibration_note: str | None = None  # set by Router when the calibration fell back to constants
        self.table = build_table(self.specs, encoder, storage, vectors)
        self.languages: LanguagePolicies | None = None  # set_languages
        self.head_cuts: tuple[LanguageDetector, dict[str, float]] | None = None  # set_languages
        self.traffic: TrafficCut | None = None  # set_languages: the cut adapted to the queries
        # The cuts of decisions combined with a peer encoder's, by its model id (peer_cut).
        self._peer_cuts: dict[str, PeerCut | None] = {}
        self._pairing: tuple[Policy, Calibration | None, Policy] | None = None  # set_languages
        self.learn_rows: tuple[np.ndarray, np.ndarray] | None = (
            None  # routecore.updates.learning_update.State
        )
        self.entities: EntityMatcher | None = None  # the Router's entities: section
        self._entity_routes = any(r.prefers_entities or r.requires_entities for r in self.specs)
        # Built with the table, not on the first query: 0.2 s at 150 x 100 exemplars.
        self.speller = Speller(self.table.texts, tokenizer_words(encoder))

    def read_query(self, text: str, repair: bool = True) -> tuple[str, tuple[tuple[str, str], ...]]:
        """What the router encodes for ``text`` and the alerts that says so: :func:`routing_text`,
        then typos of the exemplars' words repaired (unless ``policy.routes.spelling``/``repair`` is off)."""
        return read_query(text, self.speller, self.policy.spelling and repair)

    def repairs(self, text: str) -> bool:
        """Whether :meth:`read_query` repairs a typo of ``text`` (a query as ``routing_text`` reads it)."""
        return bool(text) and self.policy.spelling and bool(self.speller.repair(text)[1])

    def set_languages(self, spec_policy: Policy, calibration: Calibration | None) -> None:
        """Give queries in languages the exemplars do not cover their own policy
        (:mod:`routecore.calibrate.languages`); a policy later set by hand is used as given."""
        self.languages = LanguagePolicies.build(self.policy, spec_policy, calibration)
        # The head's out-of-scope cut per language the exemplars do not cover
        # (routecore.calibrate.exemplar_head).
        cuts = (
            {n: v.head_threshold for n, v in calibration.languages.items() if v.head_threshold is not None}
            if calibration
            else {}
        )
        # One detector for both (the head reads the language the policy's detection found).
        detector = (
            (self.languages.detector if self.languages is not None else None)
            or LanguageDetector.from_languages(calibration.languages)
            if cuts and calibration is not None
            else None
        )
        self.head_cuts = (detector, cuts) if detector is not None else None
        self.traffic = for_table(
            spec_policy, calibration, self.policy.medium, getattr(self.encoder, "model_id", "")
        )
        self._pairing, self._peer_cuts = (spec_policy, calibration, self.policy), {}

    def peer_cut(self, peer_model: str, policy: Policy) -> PeerCut | None:
        """The cuts of decisions combined with ``peer_model``'s probabilities under ``policy``
        (:mod:`routecore.calibrate.peer_cut`), built on first use; None, this router's own, when
        ``policy`` is not the one calibrated with the table (a language's own, one set by hand)."""
        if self._pairing is None or policy is not self._pairing[2] or policy.per_route:
            return None
        if peer_model not in self._peer_cuts:
            spec_policy, calibration, _ = self._pairing
            model_id = str(getattr(self.encoder, "model_id", ""))
            self._peer_cuts[peer_model] = PeerCut.build(model_id, peer_model, spec_policy, calibration)
        return self._peer_cuts.get(peer_model)

    def peer_served(self, peer_model: str, p1: float) -> None:
        """Count a query ``peer_model``'s router decided alone (a cascade's fast router, at its high
        tier) in the pair's traffic cut, at its best probability ``p1``: the cut then reads every
        routed decision of the pair, not only the harder ones this router was asked to take."""
        cut = self.peer_cut(peer_model, self.policy)
        if cut is not None and cut.traffic is not None:
            cut.traffic.observe(p1)

    def policy_for(self, q: np.ndarray) -> tuple[Policy, str | None]:
        """The policy for query vector ``q`` and, when it is a language's own, that language."""
        return self.read_language(q)[:2]

    def read_language(self, q: np.ndarray) -> tuple[Policy, str | None, str | None]:
        """:meth:`policy_for`, and the language the detector found (None when it did not run)."""
        return (self.policy, None, None) if self.languages is None else self.languages.read(self.policy, q)

    def known_previous(self, previous: Any) -> str | None:
        """:func:`~routecore.decide.arguments.known_route` among this router's routes."""
        return known_route(previous, self.by_name)

    def query_text(self, query: Any, previous: str | None, clarify: Decision | None) -> str:
        """The text to embed for ``query``, after checking the arguments."""
        if not self.specs:
            raise ConfigError("this router has no routes")
        if not isinstance(query, str):
            raise InvalidArgumentError(f"query must be a str, got {type(query).__name__}")
        clarify = clarify_arg(clarify, self.by_name)
        return f"{clarify.query}\n{query}" if clarify is not None else query

    def route(
        self,
        query: str,
        *,
        previous: str | None = None,
        context_domains: Sequence[str] = (),
        clarify: Decision | None = None,
        vector: Any = None,
        choose: Chooser | None = None,
        peer: Decision | None = None,
        peer_model: str | None = None,
        repair: bool = True,
        previous_query: str | None = None,
    ) -> Decision:
        """The decision for ``query``: :meth:`routecore.routers.router.Router.route` (which documents
        the arguments).

        ``choose`` replaces ``llm.choose`` for this call (:mod:`routecore.core.aio`); ``repair``
        False reads the query as typed (:meth:`with_typed`)."""
        previous_query = previous_query_arg(previous_query)
        if previous_query is not None and clarify is None:  # a batch of one (route_batch reads it)
            return self.route_batch(
                [query],
                previous=self.known_previous(previous),
                context_domains=context_domains,
                vectors=None if vector is None else query_vectors(vector, self.encoder.dim, 1),
                choose=choose,
                peer=None if peer is None else [peer],
                peer_model=peer_model,
                repair=repair,
                previous_query=previous_query,
            )[0]
        previous = self.known_previous(previous)
        text = self.query_text(query, previous, clarify)
        check_peer(peer, peer_model)
        known = self.table.known_domains
        context_domains, set_aside = scored_domains(context_domains_arg(context_domains), known)
        if not query.strip():
            return trace("route decision", with_notes(self.empty(text, previous), set_aside))
        t0 = time.perf_counter()
        text, notes = self.read_query(text, repair)
        notes += set_aside
        if not text:  # nothing left to read (emoji only, lone surrogates)
            return trace("route decision", with_notes(self.empty(text, previous), notes))
        if vector is not None:
            d = self.decide(
                text,
                query_vectors(vector, self.encoder.dim, 1)[0],
                previous,
                context_domains,
                clarify,
                t0,
                choose=choose,
                peer=peer,
                peer_model=peer_model,
            )
            return with_notes(d, notes)
        try:
            enc = self.encoder.encode_with_stats([text])
        except Exception as e:  # noqa: BLE001 - degrade to the LLM, never crash
            return trace("route decision", self._degraded(text, previous, e, t0, choose))
        d = self.decide(
            text,
            enc.embeddings[0],
            previous,
            context_domains,
            clarify,
            t0,
            enc.tokenize_ms,
            bool(enc.truncated),
            choose,
            peer=peer,
            peer_model=peer_model,
        )
        tail = tail_of(query) if clarify is None and peer is None else None
        if tail is not None:
            return self.with_tail(query, tail, with_notes(d, notes), previous, context_domains, choose)
        if clarify is None and peer is None and read_as_typed_too(d, notes):
            return self.with_typed(query, with_notes(d, notes), previous, context_domains)
        return with_notes(d, notes)

    def with_typed(
        self, query: str, read: Decision, previous: str | None, context_domains: Sequence[str] = ()
    ) -> Decision:
        """A query whose typos were repaired, read as typed too: that reading's decision when it decides
        more surely (a word the speller took for a typo may be a name or code: "env", "numpy"), else
        ``read``. The second reading asks no LLM (``read`` already did if it had to)."""
        typed = self.route(
            query, previous=previous, context_domains=context_domains, choose=no_llm, repair=False
        )
        return surer_reading(read, typed)

    def with_tail(
        self,
        query: str,
        tail: str,
        head: Decision,
        previous: str | None,
        context_domains: Sequence[str] = (),
        choose: Chooser | None = None,
    ) -> Decision:
        """A long query's decision read on its end too (:func:`tail_of`: a request often closes a
        pasted report): the end's when it decides more surely (routed against clarified or declined,
        or at a higher tier), else the start's ``head``."""
        end = self.route(tail, previous=previous, context_domains=context_domains, choose=choose)
        if sureness(end) <= sureness(head):
            return head
        said = (
            f"a long query ({len(query)} characters) was routed by its end ({len(tail)} characters), "
            f"which decided more surely than its start ({head.action}, tier {head.tier})"
        )
        return second_reading(head, end, "long_query", said)

    def prepare(
        self, text: str, q: np.ndarray, previous: str | None = None, clarify: Decision | None = None
    ) -> Prepared:
        """The part of :meth:`decide` before the native step."""
        t1 = time.perf_counter()
        p, lang, detected = self.read_language(q)
        # The previous route and the clarified candidates may be lifted above the best routes:
        # keep them exact.
        exact = ([previous] if previous else []) + (list(clarify.candidates) if clarify is not None else [])
        return Prepared(p, lang, self.bias_and_entities(text, p), exact, t1, detected)

    def step(self, prepared: Prepared, context_domains: Sequence[str] = ()) -> Any:
        """The native step's parameters for a prepared decision (``tables.score_many``)."""
        p = prepared.policy
        return self.table.step(p, list(context_domains), self.top_read(p), exact=prepared.exact)

    def decide(
        self,
        text: str,
        q: np.ndarray,
        previous: str | None,
        context_domains: Sequence[str],
        clarify: Decision | None,
        t0: float,
        tokenize_ms: float = 0.0,
        truncated: bool = False,
        choose: Chooser | None = None,
        prepared: Prepared | None = None,
        scored: Step | None = None,
        peer: Decision | None = None,
        peer_model: str | None = None,
    ) -> Decision:
        """The decision for ``text`` whose embedding is ``q``; ``t0`` is when its encoding began.
        ``prepared`` (:meth:`prepare`) and ``scored`` (its native step, done elsewhere: several
        tables in one call) skip those parts; ``peer``: another encoder's decision on the query
        (:meth:`Decider._with_peer`), by the model ``peer_model`` (its cuts: :meth:`peer_cut`)."""
        prep = prepared if prepared is not None else self.prepare(text, q, previous, clarify)
        p, lang, pre, exact, t1, detected = prep
        r = (
            scored
            if scored is not None
            else self.table.score(q, p, list(context_domains), self.top_read(p), exact=exact, bias=pre.bias)
        )
        r.lexical, r.preferred, r.entities = pre.lexical, pre.preferred, tuple(pre.entities)
        found = pre.entities
        t2 = time.perf_counter()
        if self.head is not None:
            self._apply_head(r, q, p, detected)
        if peer is not None:
            self._with_peer(r, peer, self.peer_cut(peer_model, p) if peer_model is not None else None)
        d = self.decide_step(text, r, previous, clarify, choose, p)
        t3 = time.perf_counter()
        llm_ms = d.llm_ms
        timings = Timings(
            tokenize_ms,
            (t1 - t0) * 1e3 - tokenize_ms,
            (t2 - t1) * 1e3,
            (t3 - t2) * 1e3 - llm_ms,
            llm_ms,
            (t3 - t0) * 1e3,
        )
        alerts = list(d.alerts)
        if truncated:
            alerts.append(Alert("truncated", "the query was truncated at the model's max_length"))
        if self.calibration_note is not None:
            alerts.append(Alert("calibration_fallback", self.calibration_note))
        head_lang = r.head_language
        if lang is not None or head_lang:
            # The numbers this language changed: the cosine cut and temperature, or the head's cut and tiers.
            keys = ("min_score", "temperature") if self.head is None else ("medium", "high")
            used = {k: (resolved(getattr(p, k), k), resolved(getattr(self.policy, k), k)) for k in keys}
            if head_lang:
                used["head_threshold"] = head_lang[1:]
            alerts.append(
                language_alert(lang if lang is not None else str(head_lang[0] if head_lang else ""), used)
            )
        dec = d.decision(
            entities=found,
            alerts=tuple(alerts),
            timings=timings,
            query=text,
            previous_route=previous,
            error_message=self.policy.error_message,
            calibrated=self.calibrated,
            generation=self.generation,
        )
        return trace("route decision", dec)

    def bias_and_entities(self, text: str, p: Policy) -> PreScore:
        """What each route's cosine gains before the decision (its lexical score, plus
        the entities it prefers or requires), its parts, and the query's entities."""
        lex = self.lexical_bias(text)
        bias, lexical = lex if lex is not None else (None, None)  # code order (the step's), spec order
        found = self.entities.find(text) if self.entities is not None else ()
        preferred = None
        if self._entity_routes:
            boost = (
                p.entity_boost
                if p.entity_boost is not None
                else resolved(p.three_way_within, "three_way_within")
            )
            eb, preferred = entity_effects(self.specs, {e.kind for e in found}, boost)
            if eb is not None:
                bias = eb if lexical is None else lexical + eb
        return PreScore(bias, lexical, found, preferred)

    def lexical_bias(self, text: str) -> tuple[np.ndarray, np.ndarray] | None:
        """What each route's cosine gains from its lexical score for ``text`` (hybrid scoring),
        in code and in spec order (:meth:`ScoreTable.lexical_bias`), or None."""
        lexical = self.lexical if self.policy.lexical else None
        return self.table.lexical_bias(lexical, text, self.policy.lexical_weight or 0.0)
