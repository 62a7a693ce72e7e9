"""The decision layer: the score tables (the native scoring step with the policy's numbers), the policy
and its rules, the decision sequence once routes are scored, its outcomes and reasons, and the query
built from a conversation. The result types are :mod:`routecore.decision`, beside the errors.
"""
