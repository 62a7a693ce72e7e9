"""Every router and its assembly: Router (route table, tool calls), bundles, the cascade, context
layers, knowledge, the LLM tool router, turns, their result types, and the routing metrics they
report to.
"""
