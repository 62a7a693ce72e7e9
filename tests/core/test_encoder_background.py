"""Encoder.encode_background (issue 36 §6): a lesson's embedding on one thread of lower priority,
on a session of its own, agreeing with encode(), through the same cache."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from test_encoder import BATCH_INVARIANT_COS, refs

from conftest import MODELS, need_shared
from routecore import Encoder


@pytest.mark.parametrize(
    "name, variant",
    [("all-minilm-l6-v2", "int8"), ("all-minilm-l6-v2", "fp32"), ("multilingual-e5-small", None)],
)
@pytest.mark.parametrize("threads", [1, 2])
def test_background_embeddings_agree_with_encode(name, variant, threads):
    """Per-text (int8) and padded (fp32) models, on the worker session (2 threads) or the only one."""
    folder = need_shared(MODELS / name)
    enc = Encoder.load(folder, variant=variant, threads=threads, cache_size=0)
    texts = [r["text"] for r in refs(folder)][:8]
    fg, bg = enc.encode(texts), enc.encode_background(texts).embeddings
    assert bg.shape == fg.shape and bg.dtype == np.float32
    assert np.sum(fg * bg, axis=1).min() >= BATCH_INVARIANT_COS
    for t, v in zip(texts[:3], fg):
        assert float(enc.encode_background(t).embeddings[0] @ v) >= BATCH_INVARIANT_COS


def test_background_encodes_share_the_cache_and_leave_the_caller_as_it_was():
    folder = need_shared(MODELS / "all-minilm-l6-v2")
    enc = Encoder.load(folder, variant="int8", threads=2, cache_size=8)
    me = threading.get_native_id()
    before = os.getpriority(os.PRIO_PROCESS, me)
    first = enc.encode_background(["restart the server"])
    assert first.cache_hits == 0 and first.infer_ms > 0
    assert os.getpriority(os.PRIO_PROCESS, me) == before  # the run went to a thread of its own
    again = enc.encode_with_stats(["restart the server"])  # a served query after its lesson
    assert again.cache_hits == 1
    np.testing.assert_array_equal(again.embeddings, first.embeddings)
    served = enc.encode_background(["restart the server"])  # a lesson on a query just served
    assert served.cache_hits == 1 and served.infer_ms == 0
    assert enc.cache_stats().hits == 2 and enc.cache_stats().misses == 1


def test_concurrent_background_and_foreground_encodes():
    folder = need_shared(MODELS / "all-minilm-l6-v2")
    enc = Encoder.load(folder, variant="int8", threads=2, cache_size=0)
    texts = [f"turn on light number {i}" for i in range(12)]
    want = enc.encode(texts)
    got: dict[int, np.ndarray] = {}

    def run(i: int) -> None:
        f = enc.encode_background if i % 2 else enc.encode_with_stats
        got[i] = f([texts[i]]).embeddings[0]

    ts = [threading.Thread(target=run, args=(i,)) for i in range(len(texts))]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert min(float(got[i] @ want[i]) for i in range(len(texts))) >= BATCH_INVARIANT_COS


def test_background_work_is_charged_to_the_encoders_share():
    folder = need_shared(MODELS / "all-minilm-l6-v2")
    enc = Encoder.load(folder, variant="int8", threads=2, cache_size=0, background_share=0.3)
    assert enc.background.share == 0.3
    enc.background.burst = 0.0  # no burst: the first piece of work already overdraws the budget
    enc.encode_background(["restart the server"])
    enc.encode_background(["turn on the kitchen light"])
    assert enc.background.waited > 0
    assert Encoder.load(folder, variant="int8").background.share == 0.1  # the default


@pytest.mark.parametrize("share", [0, 2, "0.5"])
def test_a_bad_background_share_is_refused(share):
    from routecore import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="background_share"):
        Encoder.load(need_shared(MODELS / "all-minilm-l6-v2"), variant="int8", background_share=share)
