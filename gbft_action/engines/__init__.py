"""Engine adapters, each run inside an engine worker (layer 3 of ``gbft_action.LAYERS``), and
the engine-coverage runtime.  What the host knows of an engine is ``gbft_action.knowledge``."""
