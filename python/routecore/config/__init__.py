"""What a config file is: route and tool specs, the typed schema, reading files safely, and tools in the
formats agents already have (MCP, OpenAI, LangChain) turned into routecore's own; and the readers of
what other tools hold (semantic-router config files, running MCP servers' tool lists), which
``Router.from_semantic_router`` and ``Router.from_mcp`` build from.
"""
