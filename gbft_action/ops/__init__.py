"""Operator specs, parameter domains, shape rules and ranges (layer 1 of ``gbft_action.LAYERS``).
"""
