"""Would batch-invariant batching raise the encoder's throughput (issue 18)? Research, not shipped.

    pip install onnx && python benches/batching_ceiling.py [--out /tmp/e5-per-token]

The bundled e5 int8 model quantizes activations with one scale per tensor, so the encoder
runs each text alone to keep embeddings batch-independent (issue 12 §5), and micro-batching
cannot batch the model. This script writes a variant whose every `DynamicQuantizeLinear`
becomes a per-token symmetric quantization (zero point 128, one scale per row): its batches
are invariant (`batch_invariant: true` in its config.json), so the encoder batches it for
real. Printed per model and thread count: the smallest cosine between a text encoded alone
and in a batch, and the time of one batch of 32 MASSIVE test queries against 32 single
calls (best of 3). Timing only: the variant's embeddings are not the bundled model's
(their cosine to it is printed), and it was not evaluated for accuracy.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np

import routecore
from routecore import Encoder
from routecore.evaluation import datasets as D

BUNDLED = Path(routecore.__file__).parent / "models" / "multilingual-e5-small"


def per_token_variant(out: Path) -> Path:
    """Write the per-token variant of the bundled model to ``out`` (a model folder)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    out.mkdir(parents=True, exist_ok=True)
    m = onnx.load(str(BUNDLED / "model-int8.onnx"))
    consts = {"pt_127": 127.0, "pt_eps": 1e-8, "pt_128": 128.0, "pt_0": 0.0, "pt_255": 255.0}
    m.graph.initializer.extend(numpy_helper.from_array(np.array(v, np.float32), k) for k, v in consts.items())
    m.graph.initializer.append(numpy_helper.from_array(np.array(128, np.uint8), "pt_zp"))
    nodes = []
    for k, n in enumerate(m.graph.node):
        if n.op_type != "DynamicQuantizeLinear":
            nodes.append(n)
            continue
        (x,), (q, s, z), p = n.input, n.output, f"pt{k}_"
        nodes += [
            helper.make_node("Abs", [x], [p + "abs"]),
            helper.make_node("ReduceMax", [p + "abs"], [p + "amax"], axes=[-1], keepdims=1),
            helper.make_node("Max", [p + "amax", "pt_eps"], [p + "amax2"]),
            helper.make_node("Div", [p + "amax2", "pt_127"], [s]),
            helper.make_node("Div", [x, s], [p + "xs"]),
            helper.make_node("Round", [p + "xs"], [p + "r"]),
            helper.make_node("Add", [p + "r", "pt_128"], [p + "r2"]),
            helper.make_node("Clip", [p + "r2", "pt_0", "pt_255"], [p + "c"]),
            helper.make_node("Cast", [p + "c"], [q], to=TensorProto.UINT8),
            helper.make_node("Identity", ["pt_zp"], [z]),
        ]
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    onnx.save(m, str(out / "model-int8.onnx"))
    for f in ("tokenizer.json", "LICENSE"):
        shutil.copy(BUNDLED / f, out / f)
    config = json.loads((BUNDLED / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**config, "batch_invariant": True}))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/e5-per-token")
    variant = per_token_variant(Path(ap.parse_args().out))
    texts = [s.text for loc in ("en-US", "fr-FR", "zh-CN") for s in D.massive(loc, "test").samples[:32]]
    ref = None
    for path in (None, variant):
        for threads in (1, 2):
            enc = Encoder.load(path, cache_size=0, threads=threads)
            single = np.stack([enc.encode([t])[0] for t in texts])
            batched = np.concatenate([enc.encode(texts[i : i + 32]) for i in range(0, len(texts), 32)])
            tb, ts = [], []
            for _ in range(3):
                t0 = time.perf_counter()
                enc.encode(texts[:32])
                tb.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                for t in texts[:32]:
                    enc.encode([t])
                ts.append(time.perf_counter() - t0)
            ref = single if ref is None else ref
            print(
                json.dumps(
                    {
                        "model": "bundled" if path is None else "per-token variant",
                        "threads": threads,
                        "min_cos_single_vs_batch": round(float((single * batched).sum(1).min()), 6),
                        "batch32_ms": round(1e3 * min(tb), 1),
                        "singles32_ms": round(1e3 * min(ts), 1),
                        "batch_speedup": round(min(ts) / min(tb), 2),
                        "mean_cos_to_bundled": round(float((single * ref).sum(1).mean()), 4),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
