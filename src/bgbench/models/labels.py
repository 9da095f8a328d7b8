"""How every listing (the report, the leaderboard, `bgbench runs`, the run's result) names a model:
its string and which weights it carries."""
from __future__ import annotations

import json
from typing import Any, Optional


def model_label(model: Optional[str], spec: Any = None, checkpoint_sha256: Optional[str] = None) -> str:
    """How every listing names a model: its string plus which weights it carries.

    `timm:test_resnet` may be a random init, a state_dict or a robustness checkpoint; the name
    alone does not tell them apart, so a checkpoint adds its short sha256 and a random init its
    seed. `spec` is the stored spec (a dict or its JSON text).
    """
    if not model:
        return "-"
    if isinstance(spec, str):
        spec = json.loads(spec) if spec else None
    spec = spec or {}
    sha = checkpoint_sha256 or spec.get("checkpoint_sha256")
    if sha:
        return f"{model} [sha256 {sha[:8]}]"
    seed = (spec.get("extra") or {}).get("init_seed")
    if seed is not None:
        return f"{model} [random init, seed {seed}]"
    return model


def run_model_label(run) -> str:
    """`model_label` of a stored run row. A training run's sha256 is the checkpoint it wrote, not its
    starting model's, so its label names both: `file:base.pt -> file:dfr/model.pt [sha256 ...]`."""
    label = model_label(run["model"], run["spec"], run["checkpoint_sha256"])
    if run["kind"] != "train" or not run["checkpoint_sha256"]:
        return label
    written = json.loads(run["outputs"] or "{}").get("checkpoint")
    return f"{run['model']} -> file:{written} [sha256 {run['checkpoint_sha256'][:8]}]" if written else label
