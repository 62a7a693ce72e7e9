"""The route decision once the routes are scored: the linear head's probabilities and its scope,
the confidence tiers, the scope and entity rules, bias rules and collisions, then the outcome
(:mod:`routecore.decide.route_outcomes`). A mixin of :class:`~routecore.routers.route_table.RouteTable`, which
holds the routes, their table and the policy, and scores the query."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from routecore import _native
from routecore.calibrate.languages import LanguageDetector
from routecore.calibrate.peer_cut import PeerCut
from routecore.calibrate.traffic import TrafficCut
from routecore.decide import reasons
from routecore.decide.learned import LearnedRows
from routecore.decide.policy import CLARIFY, Policy, apply_previous_boost, bias_winner, resolved, tier_of
from routecore.decide.route_outcomes import Chooser, Draft, Outcomes
from routecore.decide.tables import Step, collision_alert
from routecore.decision import Alert, Decision, Exemplar, ScoreMap
from routecore.errors import InvalidArgumentError


def _entity_alert(route: str, over: str | None = None) -> Alert:
    """The ``entity_scope`` alert: ``route`` decided by the config's entity preference (over ``over``)."""
    why = f" and {over} does not" if over else ""
    return Alert(
        "entity_scope",
        f"the query holds an entity type that {route} prefers{why}: routed by the config's rule, "
        "not by the scores (at most the medium tier)",
    )


def _pair_alert(pair: PeerCut, medium: float, high: float) -> Alert:
    """The ``pair_cuts`` alert: a decision on two encoders' probabilities met the cuts measured for
    the pair (``medium`` as in force: adapted to the combined decisions seen)."""
    return Alert(
        "pair_cuts",
        f"decided on the probabilities combined with {pair.peer_model}'s, against the cuts measured for "
        f"the pair: routed from {medium:.3f}, high tier from {high:.3f}",
        {"peer_model": pair.peer_model, "medium": medium, "high": high},
    )


def check_peer(peer: Any, peer_model: Any = None) -> None:
    """Raise InvalidArgumentError unless ``peer`` is None or a :class:`Decision` (another router's)
    and ``peer_model`` None or a model id (a str)."""
    if peer is not None and not isinstance(peer, Decision):
        raise InvalidArgumentError(f"peer must be a Decision (another router's), got {type(peer).__name__}")
    if peer_model is not None and not isinstance(peer_model, str):
        raise InvalidArgumentError(
            f"peer_model must be the peer encoder's model_id (a str), got {type(peer_model).__name__}"
        )


def peers_of(peer: Any, n: int, peer_model: Any = None) -> list[Decision | None]:
    """One peer decision (or None) for each of ``n`` queries: None, or a list of ``n``
    (``peer_model`` checked as :func:`check_peer` does)."""
    check_peer(None, peer_model)
    if peer is None:
        return [None] * n
    if isinstance(peer, (str, Decision)) or not isinstance(peer, Sequence):
        raise InvalidArgumentError("peer: one Decision (or None) per query, in a list")
    out = list(peer)
    if len(out) != n:
        raise InvalidArgumentError(f"peer: {len(out)} decisions for {n} queries")
    for d in out:
        check_peer(d)
    return out


class Decider(Outcomes):
    """The decision steps of a route table (see the module docstring)."""

    head: Any
    head_cuts: tuple[LanguageDetector, dict[str, float]] | None
    traffic: TrafficCut | None
    #: The learned exemplars of this table (set by the learner).
    learned: LearnedRows | None = None
    _head_native: tuple[Any, Any] | None = None  # the head in native form, kept per head (_native_head)

    def top_read(self, p: Policy) -> int:
        """The top exemplars a decision reads: the policy's, at least one when the table learned some
        (a ``learned`` decision reads the nearest; the Decision shows the policy's count)."""
        return max(p.top_exemplars, 1) if self.learned is not None else p.top_exemplars

    def _native_head(self) -> _native.RouteHead:
        """The head in native form, reading its classes in the table's route order (a name
        it lacks reads probability 0). Kept per head object."""
        cached = self._head_native
        if cached is None or cached[0] is not self.head:
            h = self.head
            cls = {c: i for i, c in enumerate(h.classes)}
            missing = len(h.classes)
            native = _native.RouteHead(
                np.ascontiguousarray(h.W, dtype=np.float32),
                np.ascontiguousarray(h.b, dtype=np.float32),
                [cls.get(n, missing) for n in self.table.names],
                cls.get(h.oos_class, missing),
            )
            cached = self._head_native = (h, native)
        return cached[1]

    def forget_head(self) -> None:
        """Drop the native head kept for this table (a copy of this table over new rows:
        routecore.updates.learning_update)."""
        self._head_native = None

    def _apply_head(
        self, r: Step, q: np.ndarray, policy: Policy | None = None, detected: str | None = None
    ) -> None:
        """Replace softmax probabilities by the linear head's (O(routes x dim)).

        What the cosines gained before the decision (lexical scores, entity and context
        boosts) moves the head's log-probabilities as it would move the cosine softmax's
        (the gain over the temperature); the scope reads the head alone, as the cosine
        cut reads the cosine. ``detected``: the query's language, when the table's detector
        (built from the same calibration as the head's cuts) found it already."""
        threshold, lang = self.head.threshold, None
        if self.head_cuts is not None:  # a query in a language the exemplars do not cover: its own cut
            lang = detected if detected is not None else self.head_cuts[0].detect(q)
            threshold = self.head_cuts[1].get(lang, threshold)
            r.head_language = (lang, threshold, self.head.threshold) if lang in self.head_cuts[1] else None
        # The lexical score moves the cosine softmax, not the head: the head already read the
        # words, and the gain over a per-config weight made its probabilities swing between
        # samples of one config (BENCHMARKS.md, few-shot decisions).
        gain = r.adjusted - r.dense if r.lexical is None else r.adjusted - r.dense - r.lexical
        moved = bool(gain.any())
        h = self._native_head().read(
            np.ascontiguousarray(q, dtype=np.float32),
            np.ascontiguousarray(gain, dtype=np.float32) if moved else None,
            resolved((policy or self.policy).temperature, "temperature") if moved else 1.0,
        )
        r.head_oos = h.out_of_scope >= h.best or h.best < threshold
        r.head_p1, r.head_oos_p, r.head_threshold = h.best, h.out_of_scope, threshold
        r.probs = h.probs

    def _with_peer(self, r: Step, peer: Decision, cut: PeerCut | None = None) -> None:
        """Combine the routes' probabilities with ``peer``'s, another encoder's decision on the same
        query (a cascade's fast router): their normalised geometric mean, which ranks "the best route is
        right" better than either (docs/calibration.md, "A second encoder"). The scope stays this
        router's; routes ``peer`` does not name read probability 0; a peer without probabilities
        (an empty query, an error) changes nothing. ``cut``: the pair's cuts, which the combined
        decision then meets (:mod:`routecore.calibrate.peer_cut`); None: this router's own."""
        names = self.table.names
        if r.probs.shape != (len(names),):
            return
        given = peer.probabilities
        theirs = (
            given.values_for(names)
            if isinstance(given, ScoreMap)
            else np.array([given.get(n, 0.0) for n in names], dtype=np.float64)
        )
        both = np.sqrt(r.probs.astype(np.float64) * theirs)
        total = float(both.sum())
        if total > 0.0 and np.isfinite(total):
            r.own_best = float(r.probs.max())
            r.probs = (both / total).astype(np.float32)
            r.peer_cut = cut

    def decide_step(
        self,
        text: str,
        r: Step,
        previous: str | None,
        clarify: Decision | None,
        choose: Chooser | None = None,
        policy: Policy | None = None,
    ) -> Draft:
        """The decision on a scored query ``r`` (its tier, action and reason), before its alerts and
        timings: what the policy makes of the scores (``Router.decide_step``, settable to time it)."""
        p, names = policy or self.policy, self.table.names
        adjusted, probs = r.adjusted, r.probs
        answer = None
        if clarify is not None and clarify.candidates:
            answer = self._answer(text, clarify)
            keep = np.isin(np.array(names), list(clarify.candidates))
            adjusted = np.where(keep, adjusted, -np.inf).astype(np.float32)
            if self.head is not None and float(probs[keep].sum()) > 0.0:  # the head's, among the offered
                probs = (np.where(keep, probs, 0.0) / probs[keep].sum()).astype(np.float32)
            else:
                probs = _native.softmax(adjusted, resolved(p.temperature, "temperature"))
        prev_i = names.index(previous) if previous else None
        if p.previous_strategy == "boost":
            probs = apply_previous_boost(probs, prev_i, p.previous_boost)
        # The decision reads the best three routes only (ties to the lower index).
        top_p, order = _native.topk(probs, min(3, len(probs)))
        top_p, order = top_p.tolist(), order.tolist()
        top_adj = [adjusted.item(i) for i in order]  # no fancy indexing: it is slow on cold caches
        pref = r.preferred
        if r.entity_scope and pref is not None:  # only the routes preferring the query's entities compete
            top_adj = [v if pref[i] else -np.inf for i, v in zip(order, top_adj)]
        best = order[0]
        bname = names[best]
        p1 = top_p[0]
        p2 = top_p[1] if len(order) > 1 else 0.0
        continuing = prev_i == best and p.previous_strategy == "thresholds"
        high, margin_th, medium, min_score = p.thresholds(bname, continuing)
        own = self.traffic if self.head is not None and not continuing else None
        pair = r.peer_cut  # combined with a peer's: the pair's cuts (RouteTable.peer_cut)
        if pair is not None:
            high, medium = (pair.previous_high if continuing else pair.high), pair.medium
        traffic = own if pair is None else pair.traffic if not continuing else None
        lowered = traffic.lowered(medium) if traffic is not None else None
        if clarify is None and not r.entity_scope and not r.head_oos:
            # an in-scope query as the head saw it (its own, when combined with a peer's), and as
            # the pair saw it
            if own is not None:
                own.observe(r.own_best if r.own_best is not None else float(r.probs.max()))
            if pair is not None and traffic is not None:
                traffic.observe(float(r.probs.max()))
        medium = lowered if lowered is not None else medium
        tier = tier_of(p1, p1 - p2, high, margin_th, medium)
        support, cosine = p.high_support, float(r.dense[best])
        unsupported = tier == "high" and support is not None and cosine < support
        if unsupported:  # sure, but farther from every exemplar than they are from their route: medium
            tier = "medium"
        if clarify is not None and clarify.candidates and tier == "low":
            # The user answered a clarification: the best of the routes it offered, never asked again. (Its
            # probabilities are shares among them, on another scale than the routing cut.)
            tier = "medium"
        labels, pos, texts = self.table.labels, self.table.pos, self.table.texts
        out = Draft(
            route=bname,
            tier=tier,
            confidence=p1,
            margin=p1 - p2,
            probabilities=ScoreMap(names, probs, pos),
            raw_scores=ScoreMap(names, r.dense, pos),
            lexical_scores=ScoreMap(names, r.lexical, pos) if r.lexical is not None else {},
            adjusted_scores=ScoreMap(names, adjusted, pos),
            score_bounds=ScoreMap(names, r.bound, pos),
            top_exemplars=tuple(
                Exemplar(labels[c], texts[i], s)
                for i, c, s in zip(
                    r.top_ids.tolist(),
                    r.top_labels.tolist(),
                    (r.top_dense if r.top_dense is not None else r.top_scores).tolist(),
                )
            ),
            out_of_scope=r.head_oos_p,
        )
        read, out.top_exemplars = out.top_exemplars, out.top_exemplars[: p.top_exemplars]  # (top_read)
        if unsupported:
            out.reason = reasons.unsupported(bname, p1, high, cosine, support or 0.0, r.head_oos_p)
        if answer is not None and clarify is not None:  # it named an option, its place, or none of them
            every = ScoreMap(names, r.probs, pos)  # a route not offered is read on every route's
            return self._finish(self._answered(out, answer, list(clarify.candidates), every))
        near = self.learned.near(read) if self.learned is not None and clarify is None else None
        if near is not None and (tier != "high" or r.head_oos):  # a high tier in scope stands
            return self._finish(self._learned(out, near))
        # The scope reads the cosine or the head (lexical hits move labels, not the scope), unless
        # the query holds an entity type a route prefers: the config says such a query is its own,
        # so it goes to the best of the routes that prefer it.
        in_scope_by_entity = False
        # A low-tier query that holds an entity type only other routes prefer is theirs too.
        unsure = tier == "low" and pref is not None and bool(pref.any()) and not pref[best]
        if r.head_oos or float(r.dense[best]) < min_score or unsure or r.entity_scope:
            if pref is not None and not pref[best] and clarify is None and not r.entity_scope:
                kept = np.where(
                    pref, r.probs, 0.0
                )  # before the previous-route boost, which the next pass applies
                kept = kept / kept.sum() if kept.sum() > 0 else pref / pref.sum()
                return self.decide_step(
                    text,
                    replace(r, probs=kept.astype(np.float32), entity_scope=True),
                    previous,
                    clarify,
                    choose,
                    policy,
                )
            if pref is None or not pref[best]:
                out.action, out.route, out.tier = "none", None, "low"
                out.reason = self._scope_reason(r, bname, min_score)
                return self._finish(out)
            # In scope by the config's rule, not by the scores: never the high tier.
            tier = out.tier = "medium" if tier == "high" else tier
            in_scope_by_entity = True
            out.alerts.append(_entity_alert(bname))
        elif tier == "low" and pref is not None and pref[best] and clarify is None:
            # The best route is the only one of the plausible pair that prefers the query's entity
            # type: the config's rule settles the tie, at the medium tier (before it, adding the
            # entity's gain pushed the pair past a bias rule's window and the query was clarified).
            if len(order) < 2 or not pref[order[1]]:
                tier = out.tier = "medium"
                in_scope_by_entity = True
                out.alerts.append(_entity_alert(bname, names[order[1]] if len(order) > 1 else None))
        if pair is not None:  # in scope: the cuts read were the pair's
            out.alerts.append(_pair_alert(pair, medium, high))
        if r.collision is not None and clarify is None:
            c = r.collision
            out.alerts.append(collision_alert(labels[c[0]], labels[c[1]], c[2], self.table, "route"))
        rule = bias_winner(names, order, top_adj, p, three_way=tier != "high", top_probs=top_p)
        if rule:
            winner, text_rule = rule
            out.bias_rule = text_rule
            if winner == CLARIFY:
                three = "three-way" in text_rule
                out.reason = reasons.three_way(text_rule) if three else reasons.bias_rule(text_rule, p1, p2)
                return self._finish(
                    self._clarify(
                        out, [names[i] for i, v in zip(order, top_adj) if v > -np.inf][: 3 if three else 2]
                    )
                )
            out.route = winner
            out.reason = reasons.bias_rule(text_rule, p1, p2)
            return self._finish(out)
        if in_scope_by_entity:
            kinds = ", ".join(sorted({e.kind for e in r.entities})) or "an entity type"
            out.reason = reasons.entity(bname, kinds)
        if tier == "high":
            if out.reason is None:
                out.reason = reasons.confident(bname, p1, high, p1 - p2, margin_th, continuing, r.head_oos_p)
            return self._finish(out)
        if tier == "medium":
            out.hint = bname
            if out.reason is None and clarify is not None and clarify.candidates and p1 < medium:
                out.reason = reasons.answered(bname, p1, list(clarify.candidates))
            if out.reason is None:
                out.reason = reasons.likely(
                    bname, p1, medium, high, traffic.seen if traffic and lowered else 0, r.head_oos_p
                )
            return self._finish(self._ask_llm(text, out, previous, choose, lambda: out) if self.llm else out)
        return self._finish(self._low(text, out, names, order, top_p, p, previous, choose, medium))
