"""Write the embeddings of the bundled background and parallel sets for a model into its folder.

    python scripts/make_calibration_sets.py [MODEL]   # default: the bundled model

The router reads them instead of encoding 412 sentences at every build (routecore.core.background);
run again whenever the model or either set changes (a stale file is ignored, never misused:
it holds the model id and a digest of the texts).
"""

from __future__ import annotations

import sys
from pathlib import Path

from routecore import Encoder
from routecore.core.background import SETS_FILE, encode_sets, write_sets

enc = Encoder.load(sys.argv[1]) if len(sys.argv) > 1 else Encoder.load()
out = Path(enc.onnx_path).parent / SETS_FILE
write_sets(out, enc.model_id, encode_sets(enc))
print(f"wrote {out} ({out.stat().st_size} bytes) for {enc.model_id}")
