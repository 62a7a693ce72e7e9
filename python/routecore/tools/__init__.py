"""Tool selection: the tool catalog and its scores, the tool belt, the two-level summaries, and tools in
the formats agents already have (MCP, OpenAI, LangChain).
"""
