"""The robustness suite's perturbations (routecore.evaluation.perturb): deterministic, bounded, and the
router's own normalisation undoes the harmless ones."""

from __future__ import annotations

import difflib
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routecore.decide.conversation import normalize_query
from routecore.evaluation.perturb import PERTURBATIONS, emoji, long_input, long_tail, repeat, shout, typos

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200)


@settings(max_examples=200, deadline=None)
@given(TEXT, st.integers(0, 5))
def test_every_perturbation_is_deterministic(text, seed):
    for f in PERTURBATIONS.values():
        assert f(text, seed) == f(text, seed)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcdefghij klmnop", max_size=200), st.integers(0, 5))
def test_typos_change_only_letters_and_nothing_at_rate_zero(text, seed):
    assert typos(text, 0.0, seed) == text
    t = typos(text, 0.10, seed)
    assert t.count(" ") == text.count(" ")  # a swap only moves a letter next to a letter


@pytest.mark.parametrize("seed", range(5))
def test_typos_touch_about_the_share_asked(seed):
    """On a 2,500-letter text, where the count of edits is near its mean (a short text can draw six
    doubled letters in 29, as hypothesis once found: a bound per short text is not a property)."""
    rng = random.Random(3)
    words = ["server", "production", "password", "printer", "network", "calendar", "refund", "account"]
    text = " ".join(rng.choice(words) for _ in range(300))
    t = typos(text, 0.10, seed)
    similarity = difflib.SequenceMatcher(None, text, t, autojunk=False).ratio()
    assert 0.85 <= similarity <= 0.97 and abs(len(t) - len(text)) <= 40  # 0.90-0.94 on seeds 0-4


def test_long_inputs_keep_the_query_first_and_have_the_size_asked():
    t = long_input("the production server is down", 20_000)
    assert t.startswith("the production server is down\n\n") and len(t) == 20_000
    tail = long_tail("the production server is down", 20_000, 3)
    assert tail.endswith("\n\nthe production server is down") and 19_900 <= len(tail.encode()) <= 20_000


def test_normalisation_undoes_emoji_shouting_and_repeats():
    q = "the production server is down"
    assert normalize_query(emoji(q, 1)).startswith(q) and normalize_query(shout(q)) == q
    assert normalize_query(repeat(q, 2)) == q
