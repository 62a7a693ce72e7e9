"""The reason of every decision: a stable code and one line that names the numbers compared.

Each function returns a :class:`~routecore.decision.Reason`; the codes are listed in
:data:`routecore.decision.REASON_CODES` and in README.md ("Actions and reasons").
"""

from __future__ import annotations

from routecore.decision import Reason

#: How the out-of-scope class is shown beside the routes.
NONE_OF_THESE = "none of these"
#: An out-of-scope probability under this is not named beside the routes' (it moves no number shown).
OOS_SHOWN = 0.005


def compared(*xs: float) -> list[str]:
    """``xs`` at two decimals, or at up to nine where two would print unequal numbers alike or a
    number under 1 as 1 (a best route's 0.99997 against the high tier 0.9995 reads "0.99997 >=
    0.99950", not "1.00 >= 1.00"; 0.9998271 against 0.999827 is not "0.999827 >= 0.999827")."""
    distinct = len(set(xs))
    for n in range(2, 10):
        out = [f"{x:.{n}f}" for x in xs]
        # a number in [0, 1) printed as 1 starts with "1" (string tests: this runs on every decision)
        if len(set(out)) >= distinct and not any(x < 1 and o[0] == "1" for x, o in zip(xs, out)):
            break
    return out


def _among(oos: float | None) -> str:
    """What the routes' probabilities are read among when the out-of-scope class holds some: the
    decision compares them within the routes' share, while ``routecore route`` lists every
    probability over all classes."""
    return f" among the routes ('{NONE_OF_THESE}' {oos:.2f} set aside)" if oos and oos >= OOS_SHOWN else ""


def confident(
    route: str,
    p1: float,
    high: float,
    margin: float,
    margin_cut: float,
    previous: bool = False,
    oos: float | None = None,
) -> Reason:
    """``oos``: the out-of-scope class's probability (named when it holds some); a margin cut of 0
    (a prior's) is not named."""
    what = "the previous route's high tier" if previous else "the high tier"
    sp, sh = compared(p1, high)
    line = f"{route} {sp}{_among(oos)} >= {what} {sh}"
    if margin_cut > 0:
        sm, sc = compared(margin, margin_cut)
        line += f" with margin {sm} >= {sc}"
    return Reason("previous_route" if previous else "confident", line)


def likely(
    route: str, p1: float, medium: float, high: float, adapted: int = 0, oos: float | None = None
) -> Reason:
    """``adapted``: the queries the routing cut was lowered from (routecore.calibrate.traffic), or 0."""
    sp, sm, sh = compared(p1, medium, high)
    cut = f"the routing cut {sm}" + (f" (adapted to {adapted:,} queries)" if adapted else "")
    return Reason("likely", f"{route} {sp}{_among(oos)} >= {cut} (below the high tier {sh})")


def unsupported(
    route: str, p1: float, high: float, cosine: float, support: float, oos: float | None = None
) -> Reason:
    sp, sh = compared(p1, high)
    return Reason(
        "likely",
        f"{route} {sp}{_among(oos)} >= the high tier {sh}, but its best exemplar cosine {cosine:.3f} < the "
        f"support the high tier needs {support:.3f} (how close a held-out exemplar is to its route)",
    )


def answered(route: str, p1: float, offered: list[str]) -> Reason:
    return Reason(
        "likely",
        f"{route} {p1:.2f} is the best of the routes the clarification offered ({' / '.join(offered)})",
    )


def picked(route: str, how: str, word: str, offered: list[str]) -> Reason:
    shown = " / ".join(offered)
    if how == "other":  # of two offered routes, the answer ruled out the other
        ruled_out = next((o for o in offered if o != route), route)
        return Reason(
            "likely",
            f"the answer rules out {ruled_out} ('{word}'): {route}, the other route the clarification "
            f"offered ({shown})",
        )
    if how == "elsewhere":
        return Reason(
            "likely",
            f"the answer names {route} ('{word}'), a route the clarification did not offer ({shown})",
        )
    said = "names" if how == "named" else "gives the place of"
    return Reason(
        "likely", f"the answer {said} {route} ('{word}') among the routes the clarification offered ({shown})"
    )


def unclear_answer(word: str, offered: list[str]) -> Reason:
    return Reason(
        "tie",
        f"the answer ('{word}') picks none of the routes the clarification offered "
        f"({' / '.join(offered)}): asked again",
    )


def declined_options(word: str, offered: list[str]) -> Reason:
    return Reason(
        "out_of_scope",
        f"the answer ('{word}') declines the routes the clarification offered ({' / '.join(offered)})",
    )


def out_of_scope_head(best: str, p_best: float, p_oos: float, threshold: float) -> Reason:
    if p_oos >= p_best:
        return Reason(
            "out_of_scope", f"out of scope: '{NONE_OF_THESE}' {p_oos:.2f} against {best} {p_best:.2f}"
        )
    return Reason(
        "out_of_scope",
        f"out of scope: the best route {best} {p_best:.2f} < the scope cut {threshold:.2f} "
        f"('{NONE_OF_THESE}' {p_oos:.2f})",
    )


def out_of_scope_cosine(best: str, cosine: float, min_score: float) -> Reason:
    return Reason(
        "out_of_scope",
        f"out of scope: the best route {best} has cosine {cosine:.3f} < min_score {min_score:.3f}",
    )


def low_confidence(route: str, p1: float, medium: float, then: str, oos: float | None = None) -> Reason:
    sp, sm = compared(p1, medium)
    return Reason("low_confidence", f"{route} {sp}{_among(oos)} < the routing cut {sm}: {then}")


def tie(routes: list[str], probs: list[float], medium: float, oos: float | None = None) -> Reason:
    *sp, sm = compared(*probs, medium)
    shown = " / ".join(f"{r} {p}" for r, p in zip(routes, sp))
    return Reason("tie", f"{shown}{_among(oos)} are all plausible and none reaches the routing cut {sm}")


def bias_rule(text: str, pa: float, pb: float) -> Reason:
    return Reason("bias_rule", f"bias rule {text} (probabilities {pa:.2f} and {pb:.2f}, both plausible)")


def three_way(text: str) -> Reason:
    return Reason("tie", text)


def entity(route: str, kinds: str) -> Reason:
    return Reason(
        "entity", f"{route}: out of scope by the scores, but the query holds {kinds}, which {route} prefers"
    )


def llm(route: str | None, tier: str, p1: float, best: str | None = None) -> Reason:
    what = "asked to clarify" if route is None else f"chose {route}"
    if best is None:  # nothing was scored (the encoder failed)
        return Reason("llm", f"the LLM {what} (no semantic decision: {tier} tier)")
    return Reason("llm", f"the LLM {what} (the semantic best, {best} {p1:.2f}, was at the {tier} tier)")


def learned(route: str, text: str, cosine: float) -> Reason:
    return Reason("learned", f"learn() was given this query for {route} ('{text}', cosine {cosine:.4f})")


def follow_up(joined: Reason, alone: Reason) -> Reason:
    return Reason("follow_up", f"read after the previous turn, {joined.message}; alone, {alone.message}")


def llm_failed(error: str, then: Reason) -> Reason:
    return Reason("llm_failed", f"the LLM failed ({error}); without it: {then.message}")


def empty_query() -> Reason:
    return Reason("empty_query", "the query is empty or blank")


def encoder_error(error: str, llm_too: str | None = None) -> Reason:
    return Reason(
        "error",
        f"the encoder failed ({error})" + (f" and so did the LLM ({llm_too})" if llm_too else "; no LLM"),
    )
