"""What the host knows of each engine, without importing one (layer 0 of ``gbft_action.LAYERS``):
how its log reads (``base`` and one module per engine), its name in the registry, how a build
of it is installed (``builds``) or built from source (``source``).  The campaign, the reports
and the action read this; only an engine worker imports an engine's adapter (``engines``)."""
