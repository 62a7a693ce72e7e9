"""The LLM side: the fallback router (sync, async, its HTTP), and the LLM tool router and its result."""
