"""The graph IR, its generator, solver and mutations (layer 1 of ``gbft_action.LAYERS``).
"""
