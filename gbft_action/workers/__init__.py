"""Worker processes: framing (layer 0: arrays, zygote) and serving an engine (layer 3 of
``gbft_action.LAYERS``).  May import: engines (adapters), the standard library."""
