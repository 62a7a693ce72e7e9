"""An optional light linear head over embeddings (softmax regression, trained in
seconds on CPU), with an explicit out-of-scope class when training data has one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

#: Embeddings are unit vectors: the logits are scaled up by this before the softmax.
SCALE = 20.0
#: Above twice this many rows a training step reads a random batch of this many: every config the
#: decision priors were measured on (150 routes x 20 exemplars and the background) trains on full batches.
BATCH_ROWS = 4096
#: Centred logits are floored here before the softmax: exp(-60) is 1e-26, which no float32 sum of
#: probabilities sees, while the gradient of far smaller ones (times the class weights) fell in
#: float32's subnormal range, where each multiply-add costs a microcode assist on x86 cores: it
#: made X.T @ G 2.4x slower (BENCHMARKS.md §8). The trained weights are the same to the bit.
LOGIT_FLOOR = np.float32(-60.0)


@dataclass
class LinearHead:
    """``p = softmax(x @ W + b)`` over ``classes``; ``oos_class`` (if any) is one of them."""

    W: np.ndarray
    b: np.ndarray
    classes: list[str]
    oos_class: str | None = None
    threshold: float = 0.0  # max in-scope probability below this -> out of scope

    @classmethod
    def fit(
        cls,
        X: np.ndarray,
        labels: Sequence[str],
        *,
        oos_label: str | None = "oos",
        epochs: int = 300,
        lr: float = 0.05,
        l2: float = 1e-3,
        seed: int = 0,
        batch: int = BATCH_ROWS,
    ) -> "LinearHead":
        """Adam on the class-balanced cross-entropy of ``softmax(SCALE * x @ W + b)`` plus
        ``l2 / 2 * |W|^2``, for ``epochs`` steps from a small random ``W`` (the fixed number of
        steps is part of the model: it regularises as early stopping does). Each step reads
        every row, or, above twice ``batch`` rows, ``batch`` rows drawn without replacement (the
        gradient's unbiased estimate: a step then costs ``batch / rows`` of a full one), and the
        head is then the mean of the weights of the last third of the steps (the last step's
        alone carries its batch's noise: on CLINC150's full train split, 0.9 points of right
        routes and 1.3 of precision; BENCHMARKS.md §8).

        Each step works in place on one ``[rows, classes]`` buffer (logits, then
        probabilities, then the gradient of the logits), so besides the two matrix
        products a step makes a handful of passes over it."""
        classes = sorted(set(labels))
        idx = {c: i for i, c in enumerate(classes)}
        y = np.array([idx[l] for l in labels], dtype=np.int64)
        X = np.ascontiguousarray(X, dtype=np.float32)
        n, d = X.shape
        k = len(classes)
        rng = np.random.default_rng(seed)
        W = (rng.standard_normal((d, k)) * 0.01).astype(np.float32)
        b = np.zeros(k, np.float32)
        # Batches pay only well above their size: drawing and gathering one costs a pass over it.
        m = n if n <= 2 * max(int(batch), 1) else max(int(batch), 1)
        rows = np.arange(m)
        # Class-balanced weights so the small oos class is not drowned, over the rows a step reads.
        counts = np.bincount(y, minlength=k).astype(np.float32)
        w_all = ((n / (k * counts))[y] / m).astype(np.float32)[:, None]
        Xs, ys, w = X, y, w_all
        mW, vW, mb, vb = (
            np.zeros_like(W),
            np.zeros_like(W),
            np.zeros_like(b),
            np.zeros_like(b),
        )
        tail = epochs // 3 if m < n else 0
        Wsum, bsum = np.zeros_like(W), np.zeros_like(b)
        Z = np.empty((m, k), np.float32)
        top = np.empty((m, 1), np.float32)
        for t in range(1, epochs + 1):
            if m < n:
                pick = rng.choice(n, m, replace=False)
                Xs, ys, w = X[pick], y[pick], w_all[pick]
            np.matmul(Xs, W * np.float32(SCALE), out=Z)
            Z += b
            np.max(Z, axis=1, keepdims=True, out=top)
            Z -= top
            np.maximum(Z, LOGIT_FLOOR, out=Z)
            np.exp(Z, out=Z)
            np.sum(Z, axis=1, keepdims=True, out=top)
            Z /= top  # probabilities
            Z[rows, ys] -= 1
            Z *= w  # the gradient of the loss in the logits
            gW = (Xs.T @ Z) * np.float32(SCALE) + np.float32(l2) * W
            gb = Z.sum(axis=0)
            c1, c2 = 1 - 0.9**t, 1 - 0.999**t
            for g_, m_, v_, p_ in ((gW, mW, vW, W), (gb, mb, vb, b)):
                m_ *= 0.9
                m_ += 0.1 * g_
                v_ *= 0.999
                v_ += 0.001 * g_ * g_
                p_ -= lr * (m_ / c1) / (np.sqrt(v_ / c2) + 1e-8)
            if m < n and t > epochs - tail:  # batches: the mean of the last steps' weights, not the last
                Wsum += W
                bsum += b
        if m < n and tail:
            W, b = (Wsum / tail).astype(np.float32), (bsum / tail).astype(np.float32)
        return cls(W * SCALE, b, classes, oos_label if oos_label in idx else None)

    def proba(self, X: np.ndarray) -> np.ndarray:
        z = np.atleast_2d(X).astype(np.float32) @ self.W + self.b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        out: np.ndarray = p / p.sum(axis=1, keepdims=True)
        return out

    def predict(self, X: np.ndarray) -> tuple[list[str | None], np.ndarray]:
        """(label or None for out of scope, confidence) per row."""
        p = self.proba(X)
        if self.oos_class is not None:
            o = self.classes.index(self.oos_class)
            p_in = p.copy()
            p_in[:, o] = -1
        else:
            p_in = p
        arg = p_in.argmax(axis=1)
        conf = p_in[np.arange(len(p)), arg]
        out: list[str | None] = []
        for a, c, full in zip(arg, conf, p.argmax(axis=1)):
            is_oos = (
                self.oos_class is not None and self.classes[full] == self.oos_class
            ) or c < self.threshold
            out.append(None if is_oos else self.classes[a])
        return out, conf

    def save(self, path: str | Path) -> None:
        np.savez(
            path,
            W=self.W,
            b=self.b,
            classes=np.array(self.classes),
            oos=np.array(self.oos_class or ""),
            threshold=np.array(self.threshold),
        )

    @classmethod
    def load(cls, path: str | Path) -> "LinearHead":
        z = np.load(path, allow_pickle=False)
        return cls(
            z["W"],
            z["b"],
            [str(c) for c in z["classes"]],
            str(z["oos"]) or None,
            float(z["threshold"]),
        )
