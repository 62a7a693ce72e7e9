"""Optional integrations with agent frameworks (each needs its extra, e.g. ``routecore[langgraph]``)."""
