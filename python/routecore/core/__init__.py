"""The primitives over the native core (rust/core/src: encoder/, index/, lexical/, entities/, persist/):
encoders, vector indexes, BM25, entities, the bundled background set, atomic files, progress.
"""

# Registers the "static" model-folder kind with Encoder.load (routecore.core.encoder imports no subclass).
from routecore.core import static_encoder as static_encoder
