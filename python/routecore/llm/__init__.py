"""The LLM client: the fallback router's protocol and its OpenAI-compatible client (sync, async, and
its kept-alive HTTP)."""
