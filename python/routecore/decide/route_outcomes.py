"""What a route decision ends in when the scores alone do not decide it: a clarification and its
question, the LLM fallback (and its failure), the degraded path when the encoder fails, the empty
query. A mixin of :class:`~routecore.routers.route_table.RouteTable`, which holds the routes and the
policy."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from routecore.config.specs import RouteSpec
from routecore.decide import questions, reasons
from routecore.decide.answers import Answer, read_answer
from routecore.decide.policy import CLARIFY, Policy, resolved
from routecore.decide.tables import ScoreTable, Step
from routecore.decision import Alert, Decision, Entity, Exemplar, Reason, Timings
from routecore.errors import InvalidArgumentError
from routecore.llm.llm import LLMChoice, LLMRequest, LLMRouter, route_named

#: A call that picks a route for an LLM request (``LLMRouter.choose``, or its async stand-in).
Chooser = Callable[[LLMRequest], LLMChoice]


@dataclass
class Draft:
    """A route decision while it is made: what the decision steps (``Decider.decide_step``) and the
    outcomes below fill in. :meth:`RouteTable.decide <routecore.routers.route_table.RouteTable.decide>` then
    makes the :class:`~routecore.decision.Decision` of it, with its timings and the alerts of the
    query. The fields not set keep the Decision's defaults."""

    route: str | None
    tier: str
    confidence: float
    margin: float
    probabilities: Mapping[str, float]
    raw_scores: Mapping[str, float]
    lexical_scores: Mapping[str, float]
    adjusted_scores: Mapping[str, float]
    score_bounds: Mapping[str, float]
    top_exemplars: tuple[Exemplar, ...]
    out_of_scope: float | None
    alerts: list[Alert] = field(default_factory=list)
    action: str = "route"
    candidates: tuple[str, ...] = ()
    question: str | None = None
    hint: str | None = None
    used_llm: bool = False
    fallback: str | None = None
    bias_rule: str | None = None
    fallback_chain: tuple[str, ...] = ()
    reason: Reason | None = None
    #: The time the LLM took (ms): the decision's ``timings.llm``.
    llm_ms: float = 0.0

    def decision(
        self,
        *,
        entities: tuple[Entity, ...],
        alerts: tuple[Alert, ...],
        timings: Timings,
        query: str,
        previous_route: str | None,
        error_message: str,
        calibrated: str,
        generation: int,
    ) -> Decision:
        """The :class:`~routecore.decision.Decision` of this draft, with what the route table adds:
        the query's entities, every alert (the draft's first), the timings and the router's fields."""
        return Decision(
            action=self.action,
            route=self.route,
            tier=self.tier,
            confidence=self.confidence,
            margin=self.margin,
            probabilities=self.probabilities,
            raw_scores=self.raw_scores,
            adjusted_scores=self.adjusted_scores,
            top_exemplars=self.top_exemplars,
            candidates=self.candidates,
            question=self.question,
            hint=self.hint,
            used_llm=self.used_llm,
            fallback=self.fallback,
            bias_rule=self.bias_rule,
            fallback_chain=self.fallback_chain,
            score_bounds=self.score_bounds,
            lexical_scores=self.lexical_scores,
            reason=self.reason,
            out_of_scope=self.out_of_scope,
            entities=entities,
            alerts=alerts,
            timings=timings,
            query=query,
            previous_route=previous_route,
            error_message=error_message,
            calibrated=calibrated,
            generation=generation,
        )


class Outcomes:
    """The clarify, LLM, degraded and empty outcomes of a route table (see the module docstring)."""

    specs: list[RouteSpec]
    by_name: dict[str, RouteSpec]
    #: The route list the clarification questions' languages were read from, and those languages.
    _languages: tuple[list[RouteSpec], tuple[str, ...]] | None = None
    policy: Policy
    llm: LLMRouter | None
    calibrated: str
    table: ScoreTable
    #: Which generation of the routes this table is (routecore.updates.learning installs each new one); every
    #: decision it makes carries it.
    generation: int = 0

    def fallback_chain(self, route: str) -> tuple[str, ...]:
        """``route`` and the routes reached by following ``fallback_on_error``."""
        chain: list[str] = []
        cur: str | None = route
        while cur and cur in self.by_name and cur not in chain:
            chain.append(cur)
            cur = self.by_name[cur].fallback_on_error
        return tuple(chain)

    def _low(
        self,
        text: str,
        out: Draft,
        names: Sequence[str],
        order: list[int],
        top_p: list[float],
        p: Policy,
        previous: str | None,
        choose: Chooser | None,
        medium: float | None = None,
    ) -> Draft:
        """A low-tier decision: the LLM when the policy asks it and there is one, else ``none``
        or a clarification (the LLM's failure ends there too). ``medium``: the routing cut in force."""
        bname, p1 = names[order[0]], top_p[0]
        medium = resolved(p.medium, "medium") if medium is None else medium

        def without_llm() -> Draft:
            if p.low_action == "none":
                out.action, out.route = "none", None
                out.reason = reasons.low_confidence(
                    bname, p1, medium, "declined (low_action 'none')", out.out_of_scope
                )
                return out
            if p.low_action == "llm" and self.llm is None:  # no LLM to ask: say so
                out.fallback = (
                    "low confidence and no LLM is configured (low_action 'llm'): "
                    "asked the user to clarify instead"
                )
                out.alerts.append(Alert("fallback", out.fallback))
            # A third option when the best two hold less than the clarify mass and it is plausible
            # beside the second.
            third = (
                len(order) > 2
                and p.clarify_mass is not None
                and sum(top_p[:2]) < p.clarify_mass
                and top_p[2] >= top_p[1] / np.e
            )
            n = 3 if third else 2
            shown = [names[i] for i in order[:n]]
            # A tie when every option is within one scale (a factor e) of the best; else just unsure.
            if top_p[len(shown) - 1] >= p1 / np.e:
                out.reason = reasons.tie(shown, top_p[: len(shown)], medium, out.out_of_scope)
            else:
                out.reason = reasons.low_confidence(
                    bname, p1, medium, "asked which of " + " / ".join(shown), out.out_of_scope
                )
            return self._clarify(out, shown)

        if p.low_action == "llm" and self.llm:
            return self._ask_llm(text, out, previous, choose, without_llm)
        return without_llm()

    def _scope_reason(self, r: Step, best: str, min_score: float) -> Reason:
        """Why a query is out of scope: the head's numbers, or the cosine cut."""
        if r.head_oos:
            return reasons.out_of_scope_head(best, r.head_p1, r.head_oos_p or 0.0, r.head_threshold)
        return reasons.out_of_scope_cosine(best, float(r.dense[self.table.pos[best]]), min_score)

    def _finish(self, out: Draft) -> Draft:
        out.fallback_chain = self.fallback_chain(out.route) if out.route else ()
        return out

    def _answer(self, text: str, clarify: Decision) -> Answer | None:
        """What the answer part of ``text`` (after the clarified query) says of the offered routes."""
        head = f"{clarify.query}\n"
        said = text[len(head) :] if text.startswith(head) else text.rsplit("\n", 1)[-1]
        shown = [(c, self.by_name[c].shown) for c in clarify.candidates if c in self.by_name]
        # Other routes by their label and name (a description's words are no name).
        others = [(n, s.label or n) for n, s in self.by_name.items() if n not in clarify.candidates]
        return read_answer(said, shown, others)  # the offered routes this router still has

    def _answered(
        self, out: Draft, answer: Answer, offered: list[str], every: Mapping[str, float] | None = None
    ) -> Draft:
        """The decision an answer that names, places or declines the offered routes makes: that
        route at the medium tier (no LLM asked: the user chose), or ``none``."""
        if answer.how == "unclear":  # "yes", "both": the same question again
            out.tier = "low"
            out.reason = reasons.unclear_answer(answer.word, offered)
            return self._clarify(out, offered)
        if answer.route is None:
            out.action, out.route, out.tier = "none", None, "low"
            out.reason = reasons.declined_options(answer.word, offered)
            return out
        out.route, out.tier, out.hint = answer.route, "medium", answer.route
        among = offered
        if answer.how == "elsewhere" and every is not None:  # the offered routes' shares say nothing of it
            out.probabilities, among = every, list(every)
        out.confidence = float(out.probabilities.get(answer.route, 0.0))
        rest = [out.probabilities.get(c, 0.0) for c in among if c != answer.route]
        out.margin = out.confidence - max(rest, default=0.0)
        out.reason = reasons.picked(answer.route, answer.how, answer.word, offered)
        return self._finish(out)

    def _learned(self, out: Draft, near: Exemplar) -> Draft:
        """A query that is a learned exemplar again (:mod:`routecore.decide.learned`): its route at
        the medium tier, no LLM asked (the answer it learned was given for this query)."""
        out.route, out.tier, out.hint = near.route, "medium", near.route
        out.confidence = float(out.probabilities.get(near.route, 0.0))
        rest = [v for k, v in out.probabilities.items() if k != near.route]
        out.margin = out.confidence - max(rest, default=0.0)
        out.reason = reasons.learned(near.route, near.text, near.score)
        return out

    def _clarify(self, out: Draft, candidates: list[str]) -> Draft:
        out.action, out.route, out.candidates = "clarify", CLARIFY, tuple(candidates)
        out.question = self.question(candidates)
        return out

    def question(self, candidates: Sequence[str]) -> str:
        """The clarification question that names ``candidates`` by label, else description, else
        name, in the language the config's routes are written in (:mod:`routecore.decide.questions`)."""
        specs = [self.by_name.get(c) for c in candidates]
        shown = tuple(c if s is None else s.shown for c, s in zip(candidates, specs))
        described = tuple(s is not None and not s.label and bool(s.description) for s in specs)
        if self._languages is None or self._languages[0] is not self.specs:  # read once per route set
            self._languages = (self.specs, questions.config_languages(self.specs))
        return questions.asked(shown, tuple(self._languages[1]), described)

    def llm_route(self, answer: Any) -> str:
        """The route an LLM's ``answer`` names: one of this router's names or ``CLARIFY``, the case
        folded when that names exactly one ("billing" for BILLING).

        Raises:
            InvalidArgumentError: it names none (the caller decides as without the LLM).
        """
        named = route_named(answer, (*self.by_name, CLARIFY))
        if named is None:
            raise InvalidArgumentError(f"the LLM answered an unknown route {answer!r}")
        return named

    def _ask_llm(
        self,
        text: str,
        out: Draft,
        previous: str | None,
        choose: Chooser | None,
        without: Callable[[], Draft],
    ) -> Draft:
        """The LLM's decision; ``without()`` (what a router without an LLM decides) when it fails
        or names a route this router does not have."""
        req = LLMRequest(
            text,
            [(r.name, r.description) for r in self.specs],
            out.adjusted_scores,
            previous,
            [f"{b.a} vs {b.b} within {b.within}: {b.winner}" for b in self.policy.bias_rules],
            out.hint,
        )
        t = time.perf_counter()
        tier, p1, probs = out.tier, out.confidence, out.probabilities
        best = max(probs, key=probs.__getitem__) if probs else None
        try:
            name = self.llm_route((choose or self.llm.choose)(req).route)  # type: ignore[union-attr]
            out.used_llm = True
            if name == CLARIFY:
                order = sorted(probs, key=lambda n: -probs[n])
                self._clarify(out, order[:2])
                out.reason = reasons.llm(None, tier, p1, best)
            else:
                out.route, out.action = name, "route"
                out.reason = reasons.llm(name, tier, p1, best)
                # the chosen route's own numbers, not the semantic best's (the reason names both)
                out.confidence = float(probs.get(name, 0.0))
                rest = [v for n, v in probs.items() if n != name]
                out.margin = out.confidence - max(rest, default=0.0)
        except Exception as e:  # noqa: BLE001 - any LLM failure ends where no LLM would
            err = f"{type(e).__name__}: {e}"
            out = without()
            out.fallback = f"llm failed ({err}); decided as without an LLM"
            out.alerts.append(Alert("fallback", out.fallback))
            assert out.reason is not None  # without() always says why
            out.reason = reasons.llm_failed(err, out.reason)
        out.llm_ms = (time.perf_counter() - t) * 1e3
        return out

    def _degraded(
        self, text: str, previous: str | None, err: Exception, t0: float, choose: Chooser | None = None
    ) -> Decision:
        base: dict[str, Any] = {
            "probabilities": {},
            "raw_scores": {},
            "adjusted_scores": {},
            "confidence": 0.0,
            "margin": 0.0,
            "tier": "low",
        }
        alerts = [Alert("encoder_error", f"encoder failed: {type(err).__name__}: {err}")]
        common: dict[str, Any] = dict(
            calibrated=self.calibrated,
            generation=self.generation,
            query=text,
            previous_route=previous,
            error_message=self.policy.error_message,
        )
        llm_err = None
        if self.llm is not None:
            try:
                req = LLMRequest(text, [(r.name, r.description) for r in self.specs], {}, previous)
                chosen = self.llm_route((choose or self.llm.choose)(req).route)
                clar = chosen == CLARIFY
                return Decision(
                    action="clarify" if clar else "route",
                    route=chosen,
                    used_llm=True,
                    fallback="encoder failed; routed by the LLM",
                    alerts=tuple(alerts),
                    fallback_chain=self.fallback_chain(chosen),
                    reason=reasons.llm(None if clar else chosen, "low", 0.0),
                    timings=Timings(total=(time.perf_counter() - t0) * 1e3),
                    **common,
                    **base,
                )
            except Exception as e2:  # noqa: BLE001
                llm_err = f"{type(e2).__name__}: {e2}"
                alerts.append(Alert("llm_error", f"LLM failed too: {llm_err}"))
        return Decision(
            action="error",
            route=None,
            fallback="encoder failed and no LLM router could answer",
            alerts=tuple(alerts),
            reason=reasons.encoder_error(f"{type(err).__name__}: {err}", llm_err),
            timings=Timings(total=(time.perf_counter() - t0) * 1e3),
            **common,
            **base,
        )

    def empty(self, text: str, previous: str | None) -> Decision:
        """The decision for an empty or blank query: ``none``, reason ``empty_query``, nothing encoded."""
        return Decision(
            action="none",
            route=None,
            tier="low",
            confidence=0.0,
            margin=0.0,
            probabilities={},
            raw_scores={},
            adjusted_scores={},
            reason=reasons.empty_query(),
            calibrated=self.calibrated,
            generation=self.generation,
            query=text,
            previous_route=previous,
            error_message=self.policy.error_message,
        )
