"""Model folders: the registry and the bundled default, `models pull` from a Hugging Face-compatible hub,
the local hub cache, and distilled static tables.
"""
