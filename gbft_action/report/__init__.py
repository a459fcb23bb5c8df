"""Reporting: issue trackers (github, files, none), templates, the reporter.

Layer 5 of ``gbft_action.LAYERS``.
"""
