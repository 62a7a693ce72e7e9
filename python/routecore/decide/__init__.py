"""The decision layer: the policy and its rules, the decision sequence once routes are scored, its outcomes
and reasons, the result types, and the query built from a conversation.
"""
