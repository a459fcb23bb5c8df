"""gbft-action: graph-based fuzz testing of deep-learning inference engines.

Importing this package imports neither TensorFlow nor any engine: those run
only in worker processes (see ``gbft_action.workers``).

The layers, lowest first (``LAYERS``; ``tests/test_layers.py`` enforces them): a module
imports only modules of its own layer or a lower one, and its top-level imports form no
cycle.  Each layer is a set of folders and top-level modules, and a module is in its folder's
layer: there are no per-module exceptions, so where a file lives says what it may import.

0. foundation, standard library only: what the host, the workers and the action all read:
   ``records`` (every file written to disk, and the enums they hold), ``knowledge`` (what the
   host knows of each engine and its builds), ``wire`` (worker framing), ``platforms``, and
   statefile, frontends, exitcodes, policy (symptom classes and the rule that fails a pull
   request), knobs;
1. models: ``graph`` (the IR), ``ops`` (operator specs), ``corpus``, ``oracle``, ``reference``
   (the reference frameworks' emitters and handlers);
2. findings: ``bugs`` (fingerprints, root-cause keys, triage, bundles, repros, the minimiser)
   and ``search`` (coverage, MCTS, steering);
3. running engines: ``engines`` (adapters), ``workers``, ``pipeline`` (the lanes);
4. work over a lane and its results: ``rerun`` (diagnosis, replay), ``store`` (the case store),
   ``summarize`` (summary.json and the verdict, from the records);
5. ``campaign``, and beside it ``report`` and ``learn`` (training the learned guidance);
6. ``merge`` (shards into one campaign's outputs);
7. entry points: ``cli`` and ``action``.
"""

__version__ = "0.1.0"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("gbft_action", "records", "knowledge", "wire", "platforms", "statefile", "frontends", "exitcodes", "policy",
     "knobs"),
    ("graph", "ops", "corpus", "oracle", "reference"),
    ("bugs", "search"),
    ("engines", "workers", "pipeline"),
    ("rerun", "store", "summarize"),
    ("campaign", "report", "learn"),
    ("merge",),
    ("cli", "action"),
)
