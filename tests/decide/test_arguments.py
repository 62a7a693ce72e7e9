"""routecore.decide.arguments: query vectors, ``context_domains``, per-query values as verbs take them."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routecore.decide.arguments import context_domains_arg, per_query
from routecore.errors import InvalidArgumentError


@given(st.lists(st.text(max_size=8), max_size=5))
def test_context_domains_are_any_list_of_names(names):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the current form never warns
        assert context_domains_arg(names) == tuple(names) == context_domains_arg(tuple(names))


@pytest.mark.parametrize("bad", ["ops", [1], None, {"ops": 1}, [b"ops"]], ids=repr)
def test_context_domains_that_are_not_a_list_of_names_are_refused(bad):
    with pytest.raises(InvalidArgumentError, match="context_domains must be a list"):
        context_domains_arg(bad)


def test_the_one_domain_form_warns_and_reads_as_a_list_of_one():
    with pytest.warns(DeprecationWarning, match="context_domain= is deprecated"):
        assert context_domains_arg((), "ops", "context_domain") == ("ops",)
    with pytest.warns(DeprecationWarning), pytest.raises(InvalidArgumentError, match="not both"):
        context_domains_arg(["ops"], "ops", "context_domain")
    with pytest.warns(DeprecationWarning), pytest.raises(InvalidArgumentError, match="a domain name"):
        context_domains_arg((), ["ops"], "domain")


def test_per_query_values():
    assert per_query(None, 2, "previous") == [None, None] and per_query("A", 2, "previous") == ["A", "A"]
    with pytest.raises(InvalidArgumentError, match="1 values for 2 queries"):
        per_query(["A"], 2, "previous")


def test_query_vectors_are_unit_rows_of_the_width_asked():
    import numpy as np

    from routecore.decide.arguments import query_vectors
    from routecore.errors import DimensionMismatchError, NonFiniteError

    v = query_vectors([3.0, 4.0], 2)
    assert v.shape == (1, 2) and v.dtype == np.float32 and np.allclose(v, [[0.6, 0.8]])
    assert query_vectors(np.eye(2), 2, 2).shape == (2, 2)
    with pytest.raises(DimensionMismatchError):
        query_vectors([1.0, 0.0, 0.0], 2)
    with pytest.raises(DimensionMismatchError):
        query_vectors(np.eye(2), 2, 3)
    for bad in ([float("nan"), 1.0], [0.0, 0.0]):
        with pytest.raises(NonFiniteError):
            query_vectors(bad, 2)
