"""Router bundles: a folder with the config, the embeddings and the model id.

:func:`save` writes one (``bundle.json``, one ``.rci`` index per table and the
optional ``head.npz``); :func:`load` rebuilds the router without re-embedding,
and refuses a bundle made with another model. ``Router.save`` and
``Router.load`` call them.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator, Protocol, Sequence

import numpy as np

from routecore._native import LexicalIndex
from routecore.calibrate.calibration_record import Calibration
from routecore.config.specs import RouteSpec, ToolSpec, parse_config, read_text
from routecore.core.atomic import temp_beside
from routecore.core.index import VectorIndex
from routecore.decide.fitted import Fitted, fitted_from_dict
from routecore.decide.policy import Policy
from routecore.decide.tables import EncoderLike, TableLexical, TableVectors, exemplar_texts
from routecore.errors import ConfigError, RoutecoreError, StorageIOError
from routecore.updates import learning
from routecore.updates.rebuild import Changeable

BUNDLE_VERSION = 2
#: Version 1 bundles (no calibration; every policy number written out) still load.
READABLE_VERSIONS = (1, 2)

#: The tables of a bundle, as ``<name>.rci`` files and fields of :class:`TableVectors`.
TABLES = ("routes", "tools", "anti")


@dataclass(frozen=True)
class Loaded:
    """What a bundle holds, read and checked: a router's arguments, then what :func:`restore` puts in."""

    routes: list[RouteSpec]
    tools: list[ToolSpec]
    policy: Policy
    vectors: TableVectors
    lexical: TableLexical
    #: The other keyword arguments of the router (``encoder``, ``calibration``, ``head``, ``entities``...).
    kw: dict[str, Any]
    fitted: Fitted | None = None
    learned: list[learning.LearnedExemplar] | None = None  # when the bundle holds learned exemplars


class Saved(Changeable, Protocol):
    """What a bundle reads of the router it saves and sets on the one it restores (a
    :class:`routecore.routers.router.Router`, which imports this module): besides what the learned
    exemplars' store reads (:class:`~routecore.updates.rebuild.Changeable`), its fit and specs."""

    fitted: Fitted | None

    @property
    def entities(self) -> Any: ...
    @property
    def head(self) -> Any: ...
    @property
    def route_specs(self) -> Sequence[RouteSpec]: ...
    @property
    def tool_specs(self) -> Sequence[ToolSpec]: ...


def save(router: Saved, path: str | os.PathLike[str]) -> None:
    """Write ``router`` (a :class:`routecore.routers.router.Router`) as a bundle folder at ``path``.

    A save is one generation: its tables (and head) are written under names of their
    own, with a SHA-256 each in ``bundle.json``, which is replaced last and in one
    step. A save that fails or is killed half-way leaves the previous generation in
    force; the files of older generations are removed once the new one is in place.
    """
    d = Path(path)
    try:
        if d.exists() and not d.is_dir():
            raise FileExistsError(errno.EEXIST, "a file is there, not a bundle folder", str(d))
        d.mkdir(parents=True, exist_ok=True)
        with _writer_lock(d):
            _save_locked(router, d)
    except OSError as e:  # an existing file, a read-only or full filesystem, no permission
        where = f"{e.filename}: " if e.filename and str(e.filename) != str(d) else ""
        raise StorageIOError(f"cannot save the bundle to {d}: {where}{e.strerror or e}") from None


@contextlib.contextmanager
def _writer_lock(d: Path) -> Iterator[None]:
    """One save at a time per bundle folder, across threads and processes (POSIX
    ``flock`` on ``d/.routecore.lock``): a save's clean-up must not remove the files
    of another save in flight. Loads take no lock (they retry instead)."""
    try:
        import fcntl
    except ImportError:  # Windows: saves are still atomic, but racing saves may fail
        yield
        return
    fd = os.open(d / ".routecore.lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _save_locked(router: Saved, d: Path) -> None:
    gen = uuid.uuid4().hex[:12]
    files: dict[str, dict[str, Any]] = {}
    for name, table in zip(
        TABLES, (router.route_table.table, router.tool_catalog.tools, router.tool_catalog.anti)
    ):
        files[name] = _write(d, f"{name}.{gen}.rci", table.index.save, rows=len(table.index))
    for name, lex in (("routes", router.route_table.lexical), ("tools", router.tool_catalog.lexical)):
        if lex is not None:  # the BM25 tables, saved beside the dense ones (same generation, same checks)
            files[f"lexical_{name}"] = _write(
                d, f"lexical_{name}.{gen}.rlx", lex.index.save, rows=len(lex.index)
            )
    meta = {
        "version": BUNDLE_VERSION,
        "model_id": router.encoder.model_id,
        "model_path": str(getattr(router.encoder, "path", "")),
        "model_files": getattr(router.encoder, "files_id", None),
        # The policy as given (unset thresholds null) and the calibration that fills them.
        "policy": router.spec_policy.to_dict(),
        "calibration": router.calibration.to_dict() if router.calibration else None,
        "routes": [{**asdict(r), "thresholds": r.thresholds.to_dict()} for r in router.route_specs],
        "tools": [asdict(t) for t in router.tool_specs],
        "entities": router.entities.to_dict() if router.entities is not None else None,
        "fitted": router.fitted.to_dict() if router.fitted is not None else {},
        "learned": [
            asdict(e) for e in learning.saved(router)
        ],  # the learned exemplars' source and time (routecore.updates.learning)
        "generation": gen,
        "files": files,
    }
    if router.head is not None:
        files["head"] = _write(d, f"head.{gen}.npz", router.head.save, flush=True)
        meta["head"] = files["head"]["file"]
    fd, tmp = temp_beside(d / "bundle.json", ".bundle.", ".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(meta, indent=1, ensure_ascii=False))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, d / "bundle.json")
        _fsync(d)  # the rename itself survives a power cut
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    keep = {f["file"] for f in files.values()} | {"bundle.json"}
    for old in d.iterdir():  # earlier generations (and version 1 names)
        # (and the temp files of saves that were killed: ".bundle.*", the index's ".routecore-*.tmp")
        stale = (
            old.suffix in (".rci", ".npz", ".rlx")
            or old.name.startswith(".bundle.")
            or (old.name.startswith(".routecore-") and old.suffix == ".tmp")
        )
        if old.is_file() and old.name not in keep and stale:
            old.unlink(missing_ok=True)


def _write(d: Path, fn: str, save: Any, flush: bool = False, **extra: Any) -> dict[str, Any]:
    """``save(d / fn)`` (``flush``: fsync it; the native writers do), and its ``bundle.json`` entry."""
    save(d / fn)
    if flush:
        _fsync(d / fn)
    return {"file": fn, "sha256": _sha256(d / fn), **extra}


def _fsync(path: Path) -> None:
    """Flush a file, or a folder's entries, to disk (folders: POSIX only)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return  # Windows cannot open a folder; its renames are flushed by the OS
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on a folder
    finally:
        os.close(fd)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _member(d: Path, meta: dict[str, Any], name: str, default: str) -> Path:
    """The file of table ``name`` in bundle ``d``: inside ``d``, and with the hash ``bundle.json`` gives."""
    entry = (meta.get("files") or {}).get(name)
    fn = entry.get("file") if isinstance(entry, dict) else default
    if not isinstance(fn, str) or Path(fn).name != fn or fn in ("", ".", ".."):
        raise ConfigError(f"{d}: bundle file {fn!r} for {name} is not a plain file name inside the bundle")
    p = d / fn
    if p.exists() and not p.is_file():  # a FIFO would block the read forever
        raise ConfigError(f"{d}: {fn} is not a regular file")
    if isinstance(entry, dict) and p.is_file() and _sha256(p) != entry.get("sha256"):
        raise ConfigError(
            f"{d}: {fn} does not match bundle.json (another generation or a changed file); "
            "save the bundle again"
        )
    return p


def _read_meta(d: Path) -> dict[str, Any]:
    try:
        meta = json.loads(read_text(d / "bundle.json"))
    except (ConfigError, ValueError) as e:
        raise ConfigError(f"{d} is not a router bundle: {e}") from None
    if not isinstance(meta, dict) or meta.get("version") not in READABLE_VERSIONS:
        raise ConfigError(
            f"bundle version {meta.get('version') if isinstance(meta, dict) else None} "
            f"is not supported (expected one of {READABLE_VERSIONS})"
        )
    return meta


def load(path: str | os.PathLike[str], *, encoder: EncoderLike | None = None, **kw: Any) -> Loaded:
    """The bundle at ``path``, read for ``Router.load``, which builds the router from it (``kw``
    go to the router) and then calls :func:`restore`.

    Every table must be the one ``bundle.json`` names (hash), and its rows must
    be the exemplars of the routes and tools ``bundle.json`` lists. A save that
    replaces the bundle while it loads makes the load start over on the new one."""
    d = Path(path)
    meta = _read_meta(d)
    if encoder is None:
        from routecore.core.encoder import Encoder

        mp = meta.get("model_path")
        encoder = Encoder.load(mp if mp and Path(mp).is_dir() else None)
    for _ in range(_LOAD_ATTEMPTS):
        try:
            return _load_generation(d, meta, encoder, dict(kw))
        except (OSError, RoutecoreError):
            newer = _read_meta(d)
            if newer.get("generation") == meta.get("generation"):
                raise
            meta = newer  # superseded while we read it: its files may be gone
    raise ConfigError(f"{d}: the bundle was replaced {_LOAD_ATTEMPTS} times while it loaded")


#: Exemplars that a bundle saved without ``model_files`` embeds again at load.
_UNRECORDED_ROWS = 3


def _check_unrecorded_files(d: Path, encoder: EncoderLike, texts: list[str], vectors: np.ndarray) -> None:
    """A bundle saved before bundles recorded the model's ``config.json`` and ``tokenizer.json``
    (``model_files``) cannot say which of them made its vectors: its first exemplars are embedded
    again, and must be what the encoder gives now (issue 36 §1)."""
    from routecore.core.background import REFERENCE_COSINE
    from routecore.decide.tables import embed_texts

    n = min(_UNRECORDED_ROWS, len(texts))
    if not n:
        return
    got, ref = embed_texts(encoder, texts[:n]), vectors[:n]
    norms = np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1)
    cos = float(((got * ref).sum(axis=1) / np.maximum(norms, 1e-12)).min())
    if cos < REFERENCE_COSINE:
        raise ConfigError(
            f"{d}: bundle was saved before bundles recorded the model's config.json and tokenizer.json, "
            f"and {encoder.model_id} no longer gives its exemplars' vectors (cosine {cos:.3f} < "
            f"{REFERENCE_COSINE}): pooling, prefixes or the vocabulary differ; rebuild the bundle"
        )


#: How many generations a load follows when saves keep replacing the bundle under it.
_LOAD_ATTEMPTS = 5


def _load_generation(d: Path, meta: dict[str, Any], encoder: EncoderLike, kw: dict[str, Any]) -> Loaded:
    if encoder.model_id != meta.get("model_id"):
        raise ConfigError(
            f"bundle was made with model {meta.get('model_id')}, "
            f"but the encoder is {encoder.model_id}; rebuild the bundle"
        )
    made, have = meta.get("model_files"), getattr(encoder, "files_id", None)
    if made is not None and have is not None and made != have:
        raise ConfigError(
            f"{d}: bundle was made with another config.json or tokenizer.json of model "
            f"{encoder.model_id} (files {made}, now {have}): pooling, prefixes or the vocabulary "
            "may differ; rebuild the bundle"
        )
    try:
        routes, tools = parse_config(
            {"routes": meta["routes"], "tools": meta["tools"]}, f"{d / 'bundle.json'}"
        )
    except (KeyError, TypeError) as e:
        raise ConfigError(f"{d}: bundle.json lacks or mangles {e}") from None
    specs: dict[str, tuple[Sequence[RouteSpec] | Sequence[ToolSpec], str]] = {
        "routes": (routes, "exemplars"),
        "tools": (tools, "exemplars"),
        "anti": (tools, "anti_patterns"),
    }
    vecs: dict[str, np.ndarray] = {}
    for name in TABLES:
        ix = VectorIndex.load(_member(d, meta, name, f"{name}.rci"))
        texts, owners = exemplar_texts(*specs[name])
        ids, v, labels, _ = (
            ix.vectors()
            if len(ix)
            else (np.zeros(0, np.uint64), np.zeros((0, encoder.dim), np.float32), [], [])
        )
        order = np.argsort(ids, kind="stable")  # rows were added with ids 0..n-1 in exemplar order
        if (
            len(ix) != len(texts)
            or not np.array_equal(ids[order], np.arange(len(texts)))
            or [labels[i] for i in order] != [specs[name][0][o].name for o in owners]
        ):
            raise ConfigError(
                f"{d}: the {name} table holds {len(ix)} rows "
                f"that are not the {len(texts)} exemplars bundle.json lists; "
                "save the bundle again"
            )
        vecs[name] = v[order]
    if made is None and have is not None:
        _check_unrecorded_files(d, encoder, exemplar_texts(routes)[0], vecs["routes"])
    if "policy" not in meta and "policy" not in kw:
        raise ConfigError(f"{d}: bundle.json lacks 'policy'")
    policy = kw.pop("policy", None) or Policy.from_dict(meta["policy"], f"{d / 'bundle.json'}: policy")
    lexical: dict[str, LexicalIndex] = {}
    for name in ("routes", "tools"):
        if f"lexical_{name}" in (meta.get("files") or {}):
            lix = LexicalIndex.load(_member(d, meta, f"lexical_{name}", ""))
            owners = exemplar_texts(specs[name][0])[1]
            if len(lix) != len(owners) or lix.labels().tolist() != owners:
                raise ConfigError(
                    f"{d}: the lexical {name} table holds {len(lix)} documents "
                    f"that are not the {len(owners)} exemplars "
                    "bundle.json lists; save the bundle again"
                )
            lexical[name] = lix
    if meta.get("entities") and "entities" not in kw:
        from routecore.core.entities import EntityConfig

        kw["entities"] = EntityConfig.from_dict(meta["entities"], f"{d / 'bundle.json'}: entities")
    if meta.get("calibration") and "calibration" not in kw:
        kw["calibration"] = Calibration.from_dict(meta["calibration"])
    if meta.get("head") and "head" not in kw:
        from routecore.calibrate.linear_head import LinearHead

        kw["head"] = LinearHead.load(_member(d, meta, "head", meta["head"]))
    learned = (
        learning.parse_saved(meta["learned"], f"{d / 'bundle.json'}: learned")
        if meta.get("learned")
        else None
    )
    return Loaded(
        routes,
        tools,
        policy,
        TableVectors(vecs["routes"], vecs["tools"], vecs["anti"]),
        TableLexical(lexical.get("routes"), lexical.get("tools")),
        {**kw, "encoder": encoder},
        fitted_from_dict(meta.get("fitted"), f"{d / 'bundle.json'}: fitted"),
        learned,
    )


def restore(router: Saved, loaded: Loaded) -> None:
    """Put in the ``router`` built from ``loaded`` what a bundle keeps beyond its arguments: the
    calibration results of ``routecore fit`` and the learned exemplars."""
    router.fitted = loaded.fitted
    if loaded.learned is not None:
        learning.restore(router, loaded.learned)
