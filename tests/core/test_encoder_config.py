"""Encoder config checks at load: max_length against the model's position table."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from routecore import Encoder
from routecore.errors import ModelError
from routecore.hub.models import bundled_model_dir


def _folder(tmp_path, **overrides):
    """The bundled model (files hard-linked where the filesystem allows, else copied: a symbolic
    link would lead out of the folder, which the loader refuses) with ``overrides`` in config.json."""
    src = bundled_model_dir()
    cfg = json.loads((src / "config.json").read_text())
    for f in src.iterdir():
        if f.name != "config.json":
            try:
                os.link(f, tmp_path / f.name)
            except OSError:
                shutil.copy(f, tmp_path / f.name)
    (tmp_path / "config.json").write_text(json.dumps({**cfg, **overrides}))
    return tmp_path


# multilingual-e5-small is XLM-R: 514 position rows, ids from padding_idx + 1 = 2.
XLMR = {"model_type": "xlm-roberta", "max_position_embeddings": 514}


@pytest.mark.parametrize("max_length", [513, 600, 4096])
def test_max_length_beyond_the_position_table_is_refused_at_load(tmp_path, max_length):
    with pytest.raises(ModelError) as e:
        Encoder.load(_folder(tmp_path, max_length=max_length, **XLMR))
    msg = str(e.value)
    assert (
        f"max_length {max_length}" in msg
        and "512 token positions" in msg
        and "max_position_embeddings 514" in msg
    )


def test_max_length_within_the_position_table_loads(tmp_path):
    enc = Encoder.load(_folder(tmp_path, max_length=512, **XLMR), cache_size=0)
    assert enc.max_length == 512
    assert enc.encode(["a long text " * 400]).shape == (1, enc.dim)


def test_the_bundled_and_known_models_declare_their_position_tables(tmp_path):
    from routecore.hub.models import REGISTRY

    assert {k: json.loads((bundled_model_dir() / "config.json").read_text())[k] for k in XLMR} == XLMR
    for src in REGISTRY.values():
        assert src.config["max_length"] <= src.config["max_position_embeddings"] - (
            2 if src.config["model_type"] == "xlm-roberta" else 0
        )
    with pytest.raises(ModelError, match="max_length 513"):
        Encoder.load(_folder(tmp_path, max_length=513))  # no override of the table: the bundled config's own
