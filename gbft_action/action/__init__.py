"""The GitHub Action's entry point (layer 7 of ``gbft_action.LAYERS``): reads its inputs, calls
the campaign and the reporter, writes its outputs."""
