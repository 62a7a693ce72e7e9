"""What a config file is: route and tool specs, the typed schema, reading files safely, and tools in the
formats agents already have (MCP, OpenAI, LangChain) turned into routecore's own.
"""
