"""The block policy (issue 38, the patent's step 5): TRPO against the predictor's test value.

An episode is one model: the generator draws its data-flow graph (graph.generate.draw_edges),
then the policy picks a block for each node in order, seeing what search.learned.observation
says (the operators placed so far, the ones feeding this node, its degrees, the campaign's
mean coverage per module).  At the end the model is realised and the reward is its test value
(search.learned.TestValue, against the episodes before it, as a campaign's models are judged
against the ones it ran).  A block the node cannot take costs a little and is replaced by an
admissible one (in the fuzz loop the policy is only asked among admissible blocks).  The
trainer is sb3-contrib's TRPO; the policy's block scores are exported to ONNX.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import torch
from sb3_contrib import TRPO

from ..corpus import Block, Corpus
from ..graph.generate import GenOptions, Skeleton, draw_edges, realise
from ..graph.solver import GenError
from ..records.learned import PolicyFile
from ..search.features import of_graph
from ..search.learned import Guide, TestValue, observation, observation_width

INADMISSIBLE = -0.05  # a block the node cannot take (it learns the corpus's degree rules)
UNREALISABLE = -0.5  # the solver found no shapes for the model: nothing would run


class BlockEnv(gym.Env[np.ndarray, int]):
    def __init__(self, corpus: Corpus, guide: Guide, frontend: str, opts: GenOptions, seed: int = 0) -> None:
        self.corpus, self.guide, self.frontend, self.opts = corpus, guide, frontend, opts
        self.blocks = list(corpus.blocks)
        self.ops = tuple(corpus.op_types)
        self.value: TestValue = guide.test_value()
        self.action_space: gym.spaces.Space[int] = gym.spaces.Discrete(len(self.blocks))  # type: ignore[assignment]
        self.width = width = observation_width(self.ops, guide.modules)
        # Shares and one-hots are in [0, 1]; a block of repeated operators counts each (up to its length).
        self.observation_space = gym.spaces.Box(0.0, 8.0, (width,), np.float32)
        self.rng = random.Random(seed)
        self.sk: Skeleton | None = None
        self.placed: list[Block] = []
        self.values: list[float] = []  # every episode's test value (what training raised)

    def _node(self) -> tuple[int, int, list[str]]:
        assert self.sk is not None
        j = len(self.placed)
        preds = self.sk.preds(j)
        return max(1, len(preds)), self.sk.out_degree(j), [self.placed[p].tail for p in preds]

    def _obs(self) -> np.ndarray:
        d_in, d_out, tails = self._node()
        return observation(self.ops, self.placed, tails, d_in, d_out, self.value.deficit())

    def reset(self, *, seed: int | None = None, options: dict[str, object] | None = None) -> tuple[np.ndarray, dict[str, object]]:
        super().reset(seed=seed)
        if seed is not None:
            self.rng = random.Random(seed)
        self.sk = draw_edges(self.rng, self.corpus, self.opts)
        self.sk.values = "normal"
        self.placed = []
        return self._obs(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, object]]:
        assert self.sk is not None
        d_in, d_out, _ = self._node()
        cands = self.corpus.candidates(d_in, d_out)
        b, reward = self.blocks[int(action)], 0.0
        if b not in cands:
            b, reward = self.rng.choice(cands), INADMISSIBLE
        self.placed.append(b)
        self.sk.blocks.append(b.name)
        if len(self.placed) < self.sk.n:
            return self._obs(), reward, False, False, {}
        obs = np.zeros(self.width, np.float32)
        try:
            g = realise(self.rng, self.corpus, self.sk, self.rng.randrange(1 << 30))
        except GenError:
            return obs, reward + UNREALISABLE, True, False, {}
        predicted = self.guide.predict(of_graph(g, self.frontend))
        v = self.value(predicted)
        self.value.ran(predicted)
        self.values.append(v)
        return obs, reward + float(np.clip(v, -2.0, 2.0)), True, False, {}


class _Scores(torch.nn.Module):
    """The policy's block scores (its logits) for an observation: what ONNX exports."""

    def __init__(self, policy: Any) -> None:
        super().__init__()
        self.policy = policy

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        p = self.policy
        latent = p.mlp_extractor.forward_actor(p.extract_features(obs, p.pi_features_extractor))
        return p.action_net(latent)


def train_policy(corpus: Corpus, guide: Guide, frontend: str, out: Path, steps: int, seed: int = 0,
                 log: Callable[[str], None] | None = None) -> PolicyFile:
    """Train a front end's policy for ``steps`` environment steps; write it to ``out`` (ONNX)."""
    env = BlockEnv(corpus, guide, frontend, GenOptions(blocks=(1, 12)), seed)
    torch.manual_seed(seed)
    model = TRPO("MlpPolicy", env, n_steps=512, batch_size=128, seed=seed, verbose=0,
                 policy_kwargs={"net_arch": [64, 64]})
    model.learn(total_timesteps=steps)
    if log is not None and env.values:
        k = max(1, len(env.values) // 5)
        log(f"policy {frontend}: {len(env.values)} models; mean test value, first fifth "
            f"{np.mean(env.values[:k]):+.3f}, last fifth {np.mean(env.values[-k:]):+.3f}")
    scores = _Scores(model.policy).eval()
    example = torch.zeros(1, env.width)
    torch.onnx.export(scores, (example,), str(out), input_names=["obs"], output_names=["scores"],
                      dynamic_axes={"obs": {0: "batch"}}, opset_version=18, dynamo=False)
    return PolicyFile(out.name, tuple(b.name for b in env.blocks), env.ops, steps)
