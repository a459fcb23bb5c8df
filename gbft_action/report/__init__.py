"""Reporting: issue trackers (github, files, none), templates, the reporter."""
