"""Property tests of the file loaders (issue 16 §4): an index file, a lexical index
file and a bundle, mutated at random, give a typed RoutecoreError or a usable
object, never another exception."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routecore import RoutecoreError, VectorIndex
from routecore._native import LexicalIndex
from routecore.config.specs import RouteSpec, ToolSpec
from routecore.routers.router import Router
from stubs import StubEncoder, manual, unit

SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# A mutation: flip bytes, cut the file, append bytes, or overwrite a span.
_mutation = st.one_of(
    st.tuples(
        st.just("flip"),
        st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), min_size=1, max_size=8),
    ),
    st.tuples(st.just("cut"), st.integers(0, 1 << 20)),
    st.tuples(st.just("append"), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("span"), st.tuples(st.integers(0, 1 << 20), st.binary(min_size=1, max_size=32))),
)


def mutate(data: bytes, m: tuple) -> bytes:
    kind, arg = m
    b = bytearray(data)
    if kind == "flip":
        for pos, x in arg:
            b[pos % len(b)] ^= x
    elif kind == "cut":
        del b[arg % len(b) :]
    elif kind == "append":
        b += arg
    else:
        pos, chunk = arg
        pos %= len(b)
        b[pos : pos + len(chunk)] = chunk
    return bytes(b)


@pytest.fixture(scope="module")
def index_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("ix")
    rng = np.random.default_rng(0)
    out = {}
    for storage in ("f32", "f16", "int8"):
        ix = VectorIndex(16, backend="flat", storage=storage)
        ix.add(
            np.arange(20),
            rng.standard_normal((20, 16)).astype(np.float32),
            [f"L{i % 3}" for i in range(20)],
            ["d"] * 20,
        )
        ix.save(d / f"{storage}.rci")
        out[storage] = (d / f"{storage}.rci").read_bytes()
    lex = LexicalIndex()
    lex.add(["reset my password", "le VPN est en panne", "重置密码", "khởi động lại máy chủ"], [0, 1, 2, 3])
    lex.save(str(d / "lex.rlx"))
    out["lexical"] = (d / "lex.rlx").read_bytes()
    return out


@SETTINGS
@given(st.sampled_from(["f32", "f16", "int8"]), _mutation)
def test_a_mutated_index_file_loads_or_raises_a_typed_error(index_files, tmp_path, storage, m):
    p = tmp_path / "x.rci"
    p.write_bytes(mutate(index_files[storage], m))
    try:
        ix = VectorIndex.load(p)
    except RoutecoreError:
        return
    if len(ix):  # whatever loaded is usable
        ix.search(np.ones(ix.dim, np.float32), k=min(3, len(ix)))


@SETTINGS
@given(_mutation)
def test_a_mutated_lexical_file_loads_or_raises_a_typed_error(index_files, tmp_path, m):
    p = tmp_path / "x.rlx"
    p.write_bytes(mutate(index_files["lexical"], m))
    try:
        lex = LexicalIndex.load(str(p))
    except RoutecoreError:
        return
    lex.score_labels("reset password VPN", 4)


ROUTES = [RouteSpec("A", ("a0", "a1")), RouteSpec("B", ("b0",), description="b")]
TOOLS = [ToolSpec("t", "tool t", anti_patterns=("not t",))]
ENC = StubEncoder(
    {"a0": unit(0), "a1": unit(1), "b0": unit(2), "b": unit(3), "tool t": unit(4), "not t": unit(5)}
)


@pytest.fixture(scope="module")
def saved_bundle(tmp_path_factory):
    d = tmp_path_factory.mktemp("bundle") / "b"
    Router(ROUTES, TOOLS, encoder=ENC, policy=manual()).save(d)
    return d


def _json_values():
    return st.recursive(
        st.one_of(
            st.none(), st.booleans(), st.integers(-5, 1 << 40), st.floats(allow_nan=True), st.text(max_size=8)
        ),
        lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.text(max_size=6), c, max_size=3)),
        max_leaves=8,
    )


def _paths(doc, prefix=()):
    """Every (path to a value) in a JSON document."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


@SETTINGS
@given(st.data())
def test_a_mutated_bundle_loads_or_raises_a_typed_error(saved_bundle, tmp_path, data):
    d = tmp_path / "b"
    if d.exists():
        shutil.rmtree(d)
    shutil.copytree(saved_bundle, d)
    meta = json.loads((d / "bundle.json").read_text())
    action = data.draw(st.sampled_from(["json", "file", "delete", "text"]))
    if action == "json":  # replace or delete one value anywhere in bundle.json
        paths = [p for p in _paths(meta) if p]
        path = data.draw(st.sampled_from(paths))
        parent = meta
        for k in path[:-1]:
            parent = parent[k]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(_json_values())
        (d / "bundle.json").write_text(json.dumps(meta))
    elif action == "file":  # corrupt one member file
        files = sorted(
            p for p in d.iterdir() if p.name != "bundle.json" and p.is_file() and not p.name.startswith(".")
        )
        f = data.draw(st.sampled_from(files))
        f.write_bytes(mutate(f.read_bytes(), data.draw(_mutation)))
    elif action == "delete":
        files = sorted(p for p in d.iterdir() if p.is_file() and not p.name.startswith("."))
        data.draw(st.sampled_from(files)).unlink()
    else:
        (d / "bundle.json").write_bytes(mutate((d / "bundle.json").read_bytes(), data.draw(_mutation)))
    try:
        r = Router.load(d, encoder=ENC)
    except RoutecoreError:
        return
    r.route("a0")  # whatever loaded routes
    r.tools("tool t")


def test_each_top_level_key_of_bundle_json_deleted_loads_or_raises_a_typed_error(saved_bundle, tmp_path):
    """Every key, not only those the fuzzer draws (a missing 'policy' once raised a KeyError)."""
    keys = list(json.loads((saved_bundle / "bundle.json").read_text()))
    for i, key in enumerate(keys):
        d = tmp_path / f"b{i}"
        shutil.copytree(saved_bundle, d)
        meta = json.loads((d / "bundle.json").read_text())
        del meta[key]
        (d / "bundle.json").write_text(json.dumps(meta))
        try:
            Router.load(d, encoder=ENC).route("a0")
        except RoutecoreError:
            pass
