"""Zero-label calibration: a router fits its own policy to the encoder in use."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import MODELS, ROOT, need_shared
from routecore import Encoder, Router
from routecore.calibrate.calibration import (
    Calibration,
    background_texts,
    fit_min_score,
    held_out_rows,
    nearest_same,
    route_scores,
    zero_label,
)
from routecore.config.specs import RouteSpec, ToolSpec, read_config_file
from routecore.decide.policy import CALIBRATED_KEYS, BiasRule, Policy
from routecore.errors import ConfigError

EX = ROOT / "examples"


def sane(p: Policy) -> None:
    assert all(getattr(p, k) is not None for k in CALIBRATED_KEYS if k != "tool_threshold")
    assert 0 < p.temperature < 0.5 and 0 <= p.min_score <= 1
    assert 0 < p.medium <= 1 and 0 < p.high <= 1 and 0 <= p.margin <= 1
    assert 0 < p.three_way_within < 0.2 and 0 < p.collision_gap < 0.3
    assert p.affinity_penalty < 1 < p.affinity_boost


def test_config_calibrates_for_the_encoder(it_ops_router, encoder):
    # The bundled model has a decision prior: the head's cuts come from it (routecore.calibrate.prior).
    assert it_ops_router.calibrated == "prior" and it_ops_router.calibration.source == "prior"
    sane(it_ops_router.policy)
    # The held-out exemplars and the background set were used.
    st = it_ops_router.calibration.stats
    assert st.held_out > 20 and st.background == len(background_texts()[0])
    # Bias rules of the example config get a width of one calibrated scale.
    assert all(
        r.within == pytest.approx(it_ops_router.calibration.scale) for r in it_ops_router.policy.bias_rules
    )
    d = it_ops_router.route("le serveur de production est en panne")
    assert d.calibrated == "prior" and '"calibrated": "prior"' in d.to_json()


def test_another_encoder_gets_other_numbers(it_ops_router, encoder):
    cosine = Policy.from_dict({**read_config_file(EX / "it_ops_routes.yaml")["policy"], "head": "off"})
    minilm = Router.from_config(
        EX / "it_ops_routes.yaml",
        encoder=Encoder.load(need_shared(MODELS / "all-minilm-l6-v2")),
        policy=cosine,
    )
    e5 = Router.from_config(EX / "it_ops_routes.yaml", encoder=encoder, policy=cosine)
    sane(minilm.policy)
    # MiniLM spreads its cosines far wider than e5: the scale and the out-of-scope cut follow.
    assert (
        minilm.policy.temperature > 1.5 * e5.policy.temperature
        and e5.policy.temperature == it_ops_router.policy.temperature
    )
    assert minilm.policy.min_score < e5.policy.min_score - 0.1


def test_bundle_round_trips_its_calibration(tmp_path, it_ops_router, encoder):
    it_ops_router.save(tmp_path / "b")
    back = Router.load(tmp_path / "b", encoder=encoder)
    assert back.calibration == it_ops_router.calibration and back.policy == it_ops_router.policy
    assert back.spec_policy == it_ops_router.spec_policy and back.spec_policy.temperature is None


def test_manual_values_win(encoder):
    pinned = Policy(
        high=0.97, min_score=0.5, temperature=0.02, bias_rules=(BiasRule("A", "B", "A", within=0.01),)
    )
    r = Router(
        [
            RouteSpec("A", ("reset my password", "I forgot my password")),
            RouteSpec("B", ("the VPN is down", "VPN broken")),
        ],
        encoder=encoder,
        policy=pinned,
    )
    assert (r.policy.high, r.policy.min_score, r.policy.temperature) == (0.97, 0.5, 0.02)
    assert r.policy.bias_rules[0].within == 0.01
    assert r.policy.margin == r.calibration.margin  # what was not pinned is calibrated
    everything = Policy(
        **{k: 0.5 for k in CALIBRATED_KEYS if k not in ("affinity_boost",)}, affinity_boost=1.1
    )
    m = Router([RouteSpec("A", ("x", "y"))], encoder=encoder, policy=everything)
    assert m.calibration is None and m.calibrated == "manual" and m.route("x").calibrated == "manual"


def test_fitted_calibration_overrides_explicit_values(encoder):
    r = Router(
        [RouteSpec("A", ("a1", "a2")), RouteSpec("B", ("b1", "b2"))], encoder=encoder, policy=Policy(high=0.9)
    )
    fitted = Calibration(
        **{**r.calibration.to_dict(), "source": "fitted", "high": 0.6, "per_route": {"A": {"min_score": 0.1}}}
    )
    r.calibrate(fitted)
    assert r.policy.high == 0.6 and r.policy.per_route["A"].min_score == 0.1 and r.calibrated == "fitted"


def test_tiny_config_still_yields_a_sane_policy(encoder):
    r = Router(
        [
            RouteSpec("BILLING", ("where is my invoice", "I was charged twice")),
            RouteSpec("SUPPORT", ("the app crashes on start", "I cannot log in")),
        ],
        encoder=encoder,
    )
    sane(r.policy)
    assert r.calibration.stats.tiers_fallback  # 4 held-out rows: no tier fit
    assert r.route("my card was charged two times").route == "BILLING"
    assert r.route("quelle est la recette de la tarte tatin").action == "none"


def test_one_route_config(encoder):
    r = Router(
        [RouteSpec("ORDERS", ("where is my order", "track my parcel", "my package has not arrived"))],
        encoder=encoder,
    )
    sane(r.policy)
    assert r.route("has my parcel shipped yet").route == "ORDERS"
    assert r.route("who painted the mona lisa").action == "none"


def test_tools_only_router_gets_a_floor(encoder):
    r = Router(
        tools=[
            ToolSpec("get_weather", "Current weather and forecast for a city"),
            ToolSpec("send_email", "Send an email to a contact"),
        ],
        encoder=encoder,
    )
    assert r.policy.tool_threshold is not None and 0 < r.policy.tool_threshold < 1
    rain = r.tools("will it rain in Lyon tomorrow")
    assert rain.names[0] == "get_weather" and not rain.no_tool  # the best passes: the belt holds the top k
    assert r.tools("will it rain in Lyon tomorrow", top_k=1).names == ["get_weather"]
    none = r.tools("who won the 1998 world cup")
    assert none.names == [] and none.no_tool
    each = Router(tools=r.tool_specs, encoder=encoder, policy=Policy(tool_floor="each"))
    assert each.tools("will it rain in Lyon tomorrow").names == [
        "get_weather"
    ]  # send_email is under the floor


def test_leave_one_out_excludes_the_row_itself():
    V = np.eye(4, dtype=np.float32)
    owners = np.array([0, 0, 1, 1])
    S = route_scores(V, V, owners, 2, exclude=np.arange(4))
    assert (S == 0).all()  # each row's only twin is itself
    assert route_scores(V, V, owners, 2)[0, 0] == 1
    with pytest.raises(ConfigError):
        route_scores(V, V, owners, 2, aggregation="median")


def test_high_tier_rows_lose_their_nearest_same_route_exemplars():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(40, 16)).astype(np.float32)
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    owners = np.array([0] * 31 + [1] * 8 + [2])
    rows = np.array([0, 31, 39])
    cut = nearest_same(V, owners, rows, 2)
    for r, c in zip(rows[:2], cut[:2]):
        same = np.flatnonzero((owners == owners[r]) & (np.arange(40) != r))
        sims = np.sort(V[same] @ V[r])[::-1]
        # Route 0 has 30 others: its 2 nearest go; route 1 has 7: a tenth rounds down, one still goes.
        k = 2 if owners[r] == 0 else 1
        assert c == pytest.approx(sims[k - 1]) and (sims >= c).sum() == k
    assert cut[2] == -np.inf  # a route's only exemplar has no neighbour to lose
    S = route_scores(V[rows[:2]], V, owners, 3, exclude=rows[:2], near_duplicate=cut[:2])
    plain = route_scores(V[rows[:2]], V, owners, 3, exclude=rows[:2])
    own = owners[rows[:2]]
    assert (S[[0, 1], own] < plain[[0, 1], own]).all()  # only the own route loses exemplars
    assert (S[0, 1:] == plain[0, 1:]).all() and (S[1, [0, 2]] == plain[1, [0, 2]]).all()


def test_plain_leave_one_out_rows_come_first():
    from routecore.calibrate.held_out import held_out_max, near_duplicate_cut

    rng = np.random.default_rng(1)
    V = rng.normal(size=(60, 16)).astype(np.float32)
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    owners = np.repeat(np.arange(3), 20)
    rows = np.arange(0, 60, 3)
    loo, S, S_tier, _ = held_out_max(V, owners, 3, rows, near_duplicate_cut(V, owners, rows), 2)
    assert np.array_equal(loo, route_scores(V[rows], V, owners, 3, exclude=rows))
    assert (S <= loo).all() and (S_tier <= loo).all()  # the other variants only leave more out


def test_lexical_weight_leaves_the_cosine_temperature_alone():
    from routecore.core.lexical import LexicalTable

    # 6 routes whose cosines overlap, and whose exemplars share one keyword: the lexical
    # weight is fitted, but a query without those words is still scored on cosines alone.
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(6, 32))
    owners = np.repeat(np.arange(6), 30)
    V = (centres[owners] + rng.normal(scale=1.6, size=(180, 32))).astype(np.float32)
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    words = [f"filler{i}" for i in range(40)]
    texts = [f"keyword{o} " + " ".join(rng.choice(words, 3)) for o in owners]
    bg = rng.normal(size=(len(background_texts()[0]), 32)).astype(
        np.float32
    )  # lexical scores come from its texts
    bg /= np.linalg.norm(bg, axis=1, keepdims=True)
    dense = zero_label(V, owners, 6, bg)
    fused = zero_label(V, owners, 6, bg, lexical=(LexicalTable(texts, owners, 6), texts))
    assert fused.lexical_weight > 0 and dense.lexical_weight == 0
    assert fused.temperature == dense.temperature == fused.scale


def test_held_out_rows_spread_over_routes():
    owners = np.array([0] * 100 + [1] * 3 + [2])  # route 2 has one exemplar: not held out
    rows = held_out_rows(owners, 3, sample=6)
    assert len(rows) == 6 and set(owners[rows]) == {0, 1} and (owners[rows] == 1).sum() == 3


def test_min_score_separates_in_scope_from_background():
    rng = np.random.default_rng(0)
    t = fit_min_score(rng.normal(0.8, 0.03, 500), rng.normal(0.6, 0.03, 300))
    assert 0.65 < t < 0.75
    assert fit_min_score(np.array([]), np.array([0.1, 0.2])) == pytest.approx(0.2, abs=0.01)


def test_zero_label_without_background_or_routes():
    cal = zero_label(np.zeros((0, 8), np.float32), [], 0, np.zeros((0, 8), np.float32))
    assert cal.source == "zero-label" and cal.temperature > 0


def test_calibration_from_dict_rejects_bad_input():
    good = zero_label(np.eye(4, dtype=np.float32), [0, 0, 1, 1], 2, np.eye(4, dtype=np.float32)).to_dict()
    assert Calibration.from_dict(good).to_dict() == good
    with pytest.raises(ConfigError, match="unknown keys"):
        Calibration.from_dict({**good, "nope": 1})
    with pytest.raises(ConfigError, match="temperature"):
        Calibration.from_dict({**good, "temperature": 0})
    with pytest.raises(ConfigError, match="source"):
        Calibration.from_dict({**good, "source": "guessed"})
