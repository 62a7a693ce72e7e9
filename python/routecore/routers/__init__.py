"""The routers and their assembly: Router (route table, tool calls), bundles, the cascade, context layers,
knowledge, turns, and the routing metrics they report to.
"""
