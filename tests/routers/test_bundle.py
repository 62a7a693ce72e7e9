"""Router bundles: saved embeddings, no re-embedding, model check."""

from __future__ import annotations

import pytest

from routecore.config.specs import RouteSpec, ToolSpec
from routecore.decide.fitted import ToolFit
from routecore.errors import ConfigError, StorageIOError
from routecore.routers.router import Router
from stubs import StubEncoder, manual, mix, unit


def test_bundle_round_trip_without_reembedding(tmp_path):
    enc = StubEncoder({"a": unit(0), "b": unit(1), "t": unit(2), "anti": unit(3), "q": mix(a0=0.9, a1=0.2)})
    r = Router(
        [RouteSpec("A", ("a",)), RouteSpec("B", ("b",))],
        [ToolSpec("T", "t", anti_patterns=("anti",))],
        encoder=enc,
        policy=manual(high=0.8),
    )
    stats = {"lexical_heldout_accuracy_fused": 0.9}
    r.fitted = ToolFit(0.3, "snowball", 0.75, 12, stats, {"snowball/0.75": 0.9})
    r.save(tmp_path / "bundle")
    calls = enc.calls
    back = Router.load(tmp_path / "bundle", encoder=enc)
    assert enc.calls == calls  # nothing re-embedded
    assert back.policy.high == 0.8 and back.fitted == r.fitted
    assert back.route("q").route == r.route("q").route == "A"
    assert back.route("q").probabilities == pytest.approx(r.route("q").probabilities)


def test_bundle_from_another_model_is_refused(tmp_path):
    enc = StubEncoder({"a": unit(0)})
    Router([RouteSpec("A", ("a",))], encoder=enc).save(tmp_path / "b")
    with pytest.raises(ConfigError, match="made with model stub:1"):
        Router.load(tmp_path / "b", encoder=StubEncoder({}, model_id="other:2"))
    with pytest.raises(ConfigError, match="not a router bundle"):
        Router.load(tmp_path / "nothing", encoder=enc)


def _two_route_router(enc, **kw):
    return Router(
        [RouteSpec("A", ("a",)), RouteSpec("B", ("b",))],
        [ToolSpec("T", "t")],
        encoder=enc,
        policy=manual(),
        **kw,
    )


def test_a_save_that_fails_half_way_keeps_the_previous_bundle(tmp_path, monkeypatch):
    """Tables used to be replaced one by one: a failure between two left a folder of two
    generations that loaded and routed wrongly. Now bundle.json, replaced last, names one generation."""
    from routecore.core.index import VectorIndex

    enc = StubEncoder({"a": unit(0), "b": unit(1), "t": unit(2), "a2": unit(3), "q": mix(a0=0.9)})
    old = _two_route_router(enc)
    old.save(tmp_path / "b")
    new = Router(
        [RouteSpec("B", ("a",)), RouteSpec("A", ("b",))], encoder=enc, policy=manual()
    )  # names swapped
    calls = []
    real = VectorIndex.save

    def failing(self, path):
        calls.append(path)
        if len(calls) == 2:
            raise OSError("disk full")
        real(self, path)

    monkeypatch.setattr(VectorIndex, "save", failing)
    with pytest.raises(StorageIOError, match="disk full"):  # a RoutecoreError (issue 36 §8), not OSError
        new.save(tmp_path / "b")
    monkeypatch.setattr(VectorIndex, "save", real)
    back = Router.load(tmp_path / "b", encoder=enc)
    assert back.route("q").route == "A" == old.route("q").route
    new.save(tmp_path / "b")  # a complete save replaces it, and removes the older files
    assert Router.load(tmp_path / "b", encoder=enc).route("q").route == "B"
    assert sorted(p.suffix for p in (tmp_path / "b").iterdir() if p.name != ".routecore.lock") == [
        ".json",
        ".rci",
        ".rci",
        ".rci",
        ".rlx",
    ]


def test_a_table_from_another_bundle_is_refused(tmp_path):
    enc = StubEncoder({"a": unit(0), "b": unit(1), "t": unit(2)})
    _two_route_router(enc).save(tmp_path / "one")
    Router(
        [RouteSpec("B", ("a",)), RouteSpec("A", ("b",))], [ToolSpec("T", "t")], encoder=enc, policy=manual()
    ).save(tmp_path / "two")
    one, two = tmp_path / "one", tmp_path / "two"
    routes_one = next(one.glob("routes.*.rci"))
    routes_one.write_bytes(next(two.glob("routes.*.rci")).read_bytes())  # same row count, other labels
    with pytest.raises(ConfigError, match="does not match bundle.json"):
        Router.load(one, encoder=enc)
    # A version 1 bundle (fixed names, no hashes) is checked by its labels.
    import json

    meta = json.loads((one / "bundle.json").read_text())
    for name in ("routes", "tools", "anti"):
        (one / meta["files"][name]["file"]).rename(one / f"{name}.rci")
    del meta["files"]
    meta["version"] = 1
    (one / "bundle.json").write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match="not the 2 exemplars"):
        Router.load(one, encoder=enc)


@pytest.mark.parametrize("bad", ["../../x.npz", "/etc/passwd", "sub/head.npz", ".."])
def test_bundle_paths_stay_inside_the_bundle(tmp_path, bad):
    import json

    enc = StubEncoder({"a": unit(0), "b": unit(1), "t": unit(2)})
    _two_route_router(enc).save(tmp_path / "b")
    meta = json.loads((tmp_path / "b" / "bundle.json").read_text())
    meta["head"] = bad
    (tmp_path / "b" / "bundle.json").write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match="plain file name"):
        Router.load(tmp_path / "b", encoder=enc)


def finishes(fn, *args, **kw):
    """``fn(*args, **kw)`` in a thread: what it returned or raised, or an AssertionError if it is still
    blocked after 60 s (a FIFO read never returns)."""
    import threading

    out: dict = {}

    def run():
        try:
            out["value"] = fn(*args, **kw)
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), f"{fn.__name__} blocked"
    return out


def test_a_save_onto_a_file_or_an_unwritable_place_raises_a_storage_error(tmp_path):
    """Issue 36 §8: Router.save raised FileExistsError / NotADirectoryError."""
    r = _two_route_router(StubEncoder({"a": unit(0), "b": unit(1), "t": unit(2)}))
    f = tmp_path / "a_file"
    f.write_text("x")
    with pytest.raises(StorageIOError, match=f"cannot save the bundle to {f}: a file is there"):
        r.save(f)
    with pytest.raises(StorageIOError, match=f"cannot save the bundle to {f / 'b'}: .*Not a directory"):
        r.save(f / "b")
    assert f.read_text() == "x"


def test_fifos_in_a_bundle_are_refused_not_read(tmp_path):
    """Issue 36 §8: a FIFO as bundle.json or as a table blocked the load forever."""
    import json
    import os

    enc = StubEncoder({"a": unit(0), "b": unit(1), "t": unit(2)})
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "bundle.json")
    out = finishes(Router.load, fifo, encoder=enc)
    assert isinstance(out.get("error"), ConfigError)
    assert "bundle.json is not a regular file" in str(out["error"])
    d = tmp_path / "b"
    _two_route_router(enc).save(d)
    table = json.loads((d / "bundle.json").read_text())["files"]["routes"]["file"]
    (d / table).unlink()
    os.mkfifo(d / table)
    out = finishes(Router.load, d, encoder=enc)
    assert isinstance(out.get("error"), ConfigError) and f"{table} is not a regular file" in str(out["error"])


def test_every_file_of_a_bundle_gets_the_umask_mode(tmp_path):
    """Issue 36 §9: bundle.json was 0600 while the tables were 0644, so another account could not
    serve a bundle; every file now has 0666 less the umask, whatever the umask."""
    import os

    r = _two_route_router(StubEncoder({"a": unit(0), "b": unit(1), "t": unit(2)}))
    old = os.umask(0o027)
    try:
        r.save(tmp_path / "b")
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "b").iterdir() if p.name != ".routecore.lock"]
    modes = {p.name: p.stat().st_mode & 0o777 for p in files}
    assert "bundle.json" in modes and set(modes.values()) == {0o640}, modes


def test_a_bundle_of_the_same_onnx_file_with_another_config_or_tokenizer_is_refused(tmp_path):
    """Issue 36 §1: a bundle (and the command line's config cache) was reused after config.json
    changed (pooling, prefixes, maximum length) or tokenizer.json was swapped, and then misrouted."""
    import json
    import os
    import shutil

    from routecore import Encoder
    from routecore.hub import models
    from routecore.routers import config_cache

    bundled = models.bundled_model_dir()
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copyfile(bundled / "model-int8.onnx", folder / "model-int8.onnx")  # inside (not a link out)
    os.symlink(bundled / "tokenizer.json", folder / "tokenizer.json")
    cfg = json.loads((bundled / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    enc = Encoder.load(folder, cache_size=0)
    routes = [
        RouteSpec("INCIDENT", ("the production server is down",)),
        RouteSpec("RAG", ("where is the runbook",)),
    ]
    Router(routes, encoder=enc).save(tmp_path / "b")
    assert Router.load(tmp_path / "b", encoder=Encoder.load(folder, cache_size=0)).route_specs  # unchanged
    (folder / "config.json").write_text(json.dumps({**cfg, "pooling": "cls"}), encoding="utf-8")
    changed = Encoder.load(folder, cache_size=0)
    assert changed.model_id == enc.model_id and changed.files_id != enc.files_id
    with pytest.raises(ConfigError, match="another config.json or tokenizer.json .* rebuild the bundle"):
        Router.load(tmp_path / "b", encoder=changed)
    # A bundle saved before bundles recorded model_files: its first exemplars are embedded again.
    meta_file = next(p for p in (tmp_path / "b").rglob("bundle.json"))
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    del meta["model_files"]
    meta_file.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"before bundles recorded .*\(cosine 0\.\d+ < .* rebuild the bundle"
    ):
        Router.load(tmp_path / "b", encoder=changed)
    assert Router.load(tmp_path / "b", encoder=enc).route_specs  # the same files: it loads
    built = []
    routes_file = tmp_path / "routes.json"
    rows = [{"name": r.name, "utterances": list(r.utterances)} for r in routes]
    routes_file.write_text(json.dumps({"routes": rows}))
    for e in (enc, enc, changed):  # the config cache: reused for the same files, rebuilt after the edit
        config_cache.cached_router([routes_file], e, lambda e=e: built.append(e) or Router(routes, encoder=e))
    assert built == [enc, changed]


def test_a_router_from_vectors_made_beforehand_embeds_only_the_tables_left_out():
    """``Router(vectors=TableVectors(...))``: the typed way in for embeddings made beforehand
    (an evaluation's cache, a bundle's); a table left ``None`` is embedded from its specs."""
    from routecore import TableLexical, TableVectors

    enc = StubEncoder({"a": unit(0), "b": unit(1), "t": unit(2), "q": mix(a0=0.9, a1=0.2)})
    routes, tools = [RouteSpec("A", ("a",)), RouteSpec("B", ("b",))], [ToolSpec("T", "t")]
    V = enc.encode_with_stats(["a", "b"]).embeddings
    calls = enc.calls
    r = Router(routes, tools, encoder=enc, policy=manual(), vectors=TableVectors(routes=V))
    assert enc.calls == calls + 1  # the tools' exemplar alone
    ref = Router(routes, tools, encoder=enc, policy=manual())
    assert r.route("q").probabilities == pytest.approx(ref.route("q").probabilities)
    assert r.tools("t").names == ref.tools("t").names
    with pytest.raises(ConfigError, match=r"TableVectors.routes holds an array of shape \(1, "):
        Router(routes, encoder=enc, vectors=TableVectors(routes=V[:1]))
    with pytest.raises(ConfigError, match="TableVectors.tools"):
        Router(tools=tools, encoder=enc, vectors=TableVectors(tools=V[:, :3]))
    with pytest.raises(AttributeError):  # frozen
        TableVectors().routes = V
    assert TableLexical().routes is TableLexical().tools is None
