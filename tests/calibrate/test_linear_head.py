"""The linear head (routecore.calibrate.linear_head): its training is the documented Adam on the
class-balanced cross-entropy (checked against a plain restatement of it), deterministic,
and it round-trips through save/load."""

from __future__ import annotations

import numpy as np
import pytest

from routecore.calibrate.linear_head import SCALE, LinearHead


def _reference_fit(X, labels, epochs, lr=0.05, l2=1e-3, seed=0):
    """The head's objective and optimiser written out plainly (one new array per operation)."""
    classes = sorted(set(labels))
    y = np.array([classes.index(c) for c in labels])
    n, d, k = len(X), X.shape[1], len(classes)
    W = (np.random.default_rng(seed).standard_normal((d, k)) * 0.01).astype(np.float32)
    b = np.zeros(k, np.float32)
    Y = np.eye(k, dtype=np.float32)[y]
    w = (n / (k * np.bincount(y, minlength=k)))[y][:, None]
    state = [np.zeros_like(W), np.zeros_like(W), np.zeros_like(b), np.zeros_like(b)]
    for t in range(1, epochs + 1):
        z = SCALE * (X @ W) + b
        P = np.exp(z - z.max(axis=1, keepdims=True))
        P = P / P.sum(axis=1, keepdims=True)
        G = (P - Y) * w / n
        grads = (SCALE * (X.T @ G) + l2 * W, G.sum(axis=0))
        for i, (g, p) in enumerate(zip(grads, (W, b))):
            m, v = state[2 * i], state[2 * i + 1]
            m[:] = 0.9 * m + 0.1 * g
            v[:] = 0.999 * v + 0.001 * g * g
            p -= lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return W * SCALE, b


def _blobs(n_per=30, k=4, d=16, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((k, d))
    X = np.vstack([c + 0.4 * rng.standard_normal((n_per, d)) for c in centres]).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, [f"r{i}" for i in range(k) for _ in range(n_per)]


@pytest.mark.parametrize("k", [2, 5])
def test_training_is_the_documented_adam_on_the_balanced_cross_entropy(k):
    X, labels = _blobs(k=k)
    labels[:3] = ["oos"] * 3  # a small class: the balanced weights matter
    head = LinearHead.fit(X, labels, epochs=60)
    W, b = _reference_fit(X, labels, 60)
    np.testing.assert_allclose(head.W, W, atol=1e-4)
    np.testing.assert_allclose(head.b, b, atol=1e-5)
    assert head.oos_class == "oos"


def test_the_head_separates_separable_classes_and_is_deterministic(tmp_path):
    X, labels = _blobs()
    head = LinearHead.fit(X, labels, oos_label=None)
    P = head.proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-5)
    assert [head.classes[i] for i in P.argmax(axis=1)] == labels
    again = LinearHead.fit(X, labels, oos_label=None)
    np.testing.assert_array_equal(head.W, again.W)
    head.save(tmp_path / "h.npz")
    back = LinearHead.load(tmp_path / "h.npz")
    np.testing.assert_array_equal(back.proba(X), P)
    assert back.classes == head.classes and back.oos_class is None


def test_above_the_batch_size_steps_read_random_batches_and_still_separate():
    X, labels = _blobs(n_per=60)
    full = LinearHead.fit(X, labels, oos_label=None, epochs=100)
    small = LinearHead.fit(X, labels, oos_label=None, epochs=100, batch=32)  # 240 rows: 7.5 batches
    assert not np.allclose(small.W, full.W)  # other steps
    np.testing.assert_array_equal(small.W, LinearHead.fit(X, labels, oos_label=None, epochs=100, batch=32).W)
    assert [small.classes[i] for i in small.proba(X).argmax(axis=1)] == labels
    # Up to twice the batch size the training is the full-batch one, bit for bit.
    np.testing.assert_array_equal(
        full.W, LinearHead.fit(X, labels, oos_label=None, epochs=100, batch=len(X) // 2).W
    )
