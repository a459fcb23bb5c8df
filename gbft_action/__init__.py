"""gbft-action: graph-based fuzz testing of deep-learning inference engines.

Importing this package imports neither TensorFlow nor any engine: those run
only in worker processes (see ``gbft_action.workers``).

The layers, lowest first (``LAYERS``; ``tests/test_layers.py`` enforces them): a module
imports only modules of its own layer or a lower one, and its top-level imports form no
cycle.  A module is in the layer of the longest prefix that names it.

0. foundation, standard library only: what the host, the workers and the action all read
   (statefile, frontends, engine knowledge and builds, symptom policy, worker framing, and
   the records every layer writes and reads: records);
1. models: the graph IR, operator specs, corpus, oracle, the reference frameworks' emitters
   and handlers;
2. findings: fingerprints, root-cause keys, triage, bundles and repros, the minimiser,
   the search (coverage, MCTS, steering);
3. running engines: adapters, worker processes, the pipeline's lanes;
4. work over a lane: diagnosis, replay, the case store;
5. the campaign, and the reporter and the learned guidance's training beside it;
6. merge (shards into one campaign's outputs);
7. entry points: the CLI and the action.
"""

__version__ = "0.1.0"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("gbft_action", "records", "statefile", "frontends", "exitcodes", "knobs", "engines.knowledge", "engines.mnn_knowledge",
     "engines.onnxruntime_knowledge", "engines.registry", "engines.builds", "engines.source", "bugs.policy",
     "workers.arrays", "workers.zygote", "platforms"),
    ("graph", "ops", "corpus", "oracle", "reference"),
    ("bugs", "bugs.fingerprint", "bugs.rootcause", "bugs.triage", "bugs.bundle", "bugs.repro", "bugs.minimize", "search"),
    ("engines", "workers", "pipeline"),
    ("bugs.diagnose", "bugs.replay", "store"),
    ("campaign", "report", "learn"),
    ("merge",),
    ("cli", "action"),
)
