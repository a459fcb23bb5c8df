"""gbft-action: graph-based fuzz testing of deep-learning inference engines.

Importing this package imports neither TensorFlow nor any engine: those run
only in worker processes (see ``gbft_action.workers``).
"""

__version__ = "0.1.0"
