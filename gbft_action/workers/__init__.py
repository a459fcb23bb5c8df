"""Worker processes that serve an engine or a reference framework, and their supervisor (layer 3
of ``gbft_action.LAYERS``); their framing is ``gbft_action.wire``."""
