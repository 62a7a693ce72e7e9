"""routecore.decide.tables: the arguments every verb shares (``context_domains``, per-query values)."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routecore.decide.tables import context_domains_arg, per_query
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
