"""The cuts of decisions taken on two encoders' probabilities (``Router.route``'s ``peer``).

A router given another encoder's decision on a query (a cascade's fast router) decides on the
normalised geometric mean of both heads' probabilities. That mean is sharper than one head's, so
the router's own cuts, fitted to its head alone, route more than they should: on MASSIVE en at 5
and 10 exemplars per route the routed precision fell to 93.9 / 94.8 % (BENCHMARKS.md §5). A pair
of models can have its own decision prior, measured on the combined probabilities on the same dev
splits (``scripts/fit_pair_prior.py``; ``data/priors.json`` under
:func:`~routecore.calibrate.prior.pair_key`). :class:`PeerCut` holds a router's cuts under it and
the traffic cut that adapts them to the combined decisions it has taken.

Without a pair prior, for a config written in a language the pair's prior was not measured on (MiniLM
reads English only: with it in front of e5 on MASSIVE fr, k = 10, the combined probabilities routed 5.3
points fewer queries right), or when the config sets a cut itself (``medium``, ``high``) or was fitted
(``routecore fit``), combined decisions meet the router's own cuts, and no ``pair_cuts`` alert says
otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from routecore.calibrate.calibration_record import Calibration
from routecore.calibrate.prior import pair_key, prior_for
from routecore.calibrate.traffic import TrafficCut


@dataclass(frozen=True)
class PeerCut:
    """A router's cuts for decisions combined with ``peer_model``'s probabilities.

    ``medium``, ``high`` and ``previous_high`` are the pair prior's levels at the router's config
    (:meth:`DecisionPrior.cuts`); ``traffic`` adapts ``medium`` to the combined best probabilities
    seen (None when the prior has no traffic level, the config lies outside its span, or
    ``policy.routes.adapt_cut`` is off); ``source`` names the prior."""

    peer_model: str
    medium: float
    high: float
    previous_high: float
    traffic: TrafficCut | None
    source: str

    @classmethod
    def build(
        cls, model_id: str, peer_model: str, spec_policy: Any, calibration: Calibration | None
    ) -> "PeerCut | None":
        """The cuts for ``model_id``'s router (its config's policy ``spec_policy`` and its
        ``calibration``) paired with ``peer_model``; None when they are not the prior's to set
        (a calibration not from the model's prior, a config's own ``medium`` or ``high``), routecore
        has no prior for the pair, or the config is written in a language the prior was not measured on."""
        if (
            calibration is None
            or calibration.source != "prior"
            or spec_policy.medium is not None
            or spec_policy.high is not None
            or not spec_policy.prior
        ):
            return None
        prior = prior_for(pair_key(model_id, peer_model), spec_policy.route_precision)
        if prior is None:
            return None
        written = {n for n, v in calibration.languages.items() if v.covered}
        if prior.languages and not written <= set(prior.languages):
            return None  # measured on other languages' configs (the peer may not read these)
        stats = calibration.stats
        cuts = prior.cuts(*prior.config_of(stats))
        assert cuts.medium is not None and cuts.high is not None and cuts.previous_high is not None
        traffic = TrafficCut.build(prior, stats, cuts.medium) if spec_policy.adapt_cut else None
        return cls(peer_model, cuts.medium, cuts.high, cuts.previous_high, traffic, prior.source)
