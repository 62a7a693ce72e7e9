"""An optional light linear head over embeddings (softmax regression, trained in
seconds on CPU), with an explicit out-of-scope class when training data has one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np


@dataclass
class LinearHead:
    """``p = softmax(x @ W + b)`` over ``classes``; ``oos_class`` (if any) is one of them."""

    W: np.ndarray
    b: np.ndarray
    classes: list[str]
    oos_class: str | None = None
    threshold: float = 0.0  # max in-scope probability below this -> out of scope

    @classmethod
    def fit(cls, X: np.ndarray, labels: Sequence[str], *, oos_label: str | None = "oos", epochs: int = 300, lr: float = 0.05,
            l2: float = 1e-3, seed: int = 0) -> "LinearHead":
        classes = sorted(set(labels))
        idx = {c: i for i, c in enumerate(classes)}
        y = np.array([idx[l] for l in labels])
        X = np.ascontiguousarray(X, dtype=np.float32)
        n, d = X.shape
        k = len(classes)
        rng = np.random.default_rng(seed)
        W = (rng.standard_normal((d, k)) * 0.01).astype(np.float32)
        b = np.zeros(k, np.float32)
        Y = np.zeros((n, k), np.float32)
        Y[np.arange(n), y] = 1
        # Class-balanced weights so the small oos class is not drowned.
        counts = np.bincount(y, minlength=k).astype(np.float32)
        w = (n / (k * counts))[y][:, None]
        mW, vW, mb, vb = np.zeros_like(W), np.zeros_like(W), np.zeros_like(b), np.zeros_like(b)
        scale = 20.0  # embeddings are unit vectors: scale logits up
        for t in range(1, epochs + 1):
            z = scale * (X @ W) + b
            z -= z.max(axis=1, keepdims=True)
            P = np.exp(z)
            P /= P.sum(axis=1, keepdims=True)
            G = (P - Y) * w / n
            gW = scale * (X.T @ G) + l2 * W
            gb = G.sum(axis=0)
            for g_, m_, v_, p_ in ((gW, mW, vW, W), (gb, mb, vb, b)):
                m_ *= 0.9
                m_ += 0.1 * g_
                v_ *= 0.999
                v_ += 0.001 * g_ * g_
                p_ -= lr * (m_ / (1 - 0.9**t)) / (np.sqrt(v_ / (1 - 0.999**t)) + 1e-8)
        head = cls(W * scale, b, classes, oos_label if oos_label in idx else None)
        return head

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
            is_oos = (self.oos_class is not None and self.classes[full] == self.oos_class) or c < self.threshold
            out.append(None if is_oos else self.classes[a])
        return out, conf

    def save(self, path: str | Path) -> None:
        np.savez(path, W=self.W, b=self.b, classes=np.array(self.classes), oos=np.array(self.oos_class or ""), threshold=np.array(self.threshold))

    @classmethod
    def load(cls, path: str | Path) -> "LinearHead":
        z = np.load(path, allow_pickle=False)
        return cls(z["W"], z["b"], [str(c) for c in z["classes"]], str(z["oos"]) or None, float(z["threshold"]))
