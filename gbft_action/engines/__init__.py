"""Engines: what the host knows of each (layer 0: knowledge, registry, builds, source) and the
adapters that run one in a worker (layer 3 of ``gbft_action.LAYERS``).  May import: workers.arrays."""
