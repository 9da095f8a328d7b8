"""`predictions:NAME`: a model known only by its predictions (a closed model behind an API).

`bgbench eval --predictions FILE.csv` records such a model's eval run under this name. Nothing can
run it: the challenge, the probes and `edit --model` need a network to feed composites, noise and
edits to, so asking for one is a one-line error that says what can be done instead.
"""
from __future__ import annotations

from ..errors import CheckpointError
from .options import ModelRequest, register_scheme

SCHEME = "predictions"


def predictions_peek(request: ModelRequest):
    """A study cannot run such a model either: its plan says so, in the same line."""
    predictions_model(request)


@register_scheme(SCHEME, peek=predictions_peek, usage="predictions:NAME", runnable=False,
                 summary="a model known only by its predictions (bgbench eval --predictions); cannot be run")
def predictions_model(request: ModelRequest):
    """Refuse, in one line: a model known by its predictions cannot be run."""
    raise CheckpointError(f"{request.name} is known only by its predictions (a file recorded with `bgbench eval "
                          f"--predictions`); the challenge, the probes and edit --model need a model that bgbench "
                          f"can run (timm:, file:, zoo:, openclip:, hf:)")
