"""Tool selection: the tool catalog and its scores, the tool belt and the two-level summaries."""
