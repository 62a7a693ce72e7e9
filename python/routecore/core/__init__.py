"""The primitives over the native core (rust/core/src: encoder/, index/, lexical/, entities/, persist/):
encoders, vector indexes, BM25, entities, the bundled background set, atomic files, progress.
"""
