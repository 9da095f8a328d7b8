"""The challenge engine's pair efficiency: learnt ordering and full batches (verdicts stay exact)."""
import math

import numpy as np
import pytest
import torch
from torch import nn

from bgbench.data import discover
from bgbench.evaluation.challenge.engine import ChallengeEngine
from bgbench.evaluation.challenge.runner import load_backgrounds, load_foregrounds
from bgbench.models.spec import BgModel, ModelSpec
from challenge_toys import colour_model, write_colour_dataset


@pytest.fixture(scope="module")
def colour_root(tmp_path_factory):
    return write_colour_dataset(tmp_path_factory.mktemp("colour"), per_class=30, size=16, seed=0)


class _Lookup(nn.Module):
    """Predicts matrix[i, j] for the composite of foreground i and background j, whose indices the
    images carry in their pixels (the foreground's in pixel 0, which its mask covers; the
    background's in pixel 1)."""

    def __init__(self, matrix):
        super().__init__()
        self.matrix = torch.as_tensor(matrix, dtype=torch.long)

    def forward(self, x):
        v = (x * 255).round().long()
        i = v[:, 0, 0, 0] + 256 * v[:, 1, 0, 0]
        j = v[:, 0, 0, 1] + 256 * v[:, 1, 0, 1]
        return nn.functional.one_hot(self.matrix[i, j], 9).float()


def _lookup_tensors(n, b):
    fg = torch.zeros(n, 1, 2, 3, dtype=torch.uint8)
    fg[:, 0, 0, 0], fg[:, 0, 0, 1] = torch.arange(n) % 256, torch.arange(n) // 256
    bg = torch.zeros(b, 1, 2, 3, dtype=torch.uint8)
    bg[:, 0, 1, 0], bg[:, 0, 1, 1] = torch.arange(b) % 256, torch.arange(b) // 256
    masks = torch.zeros(n, 1, 2, dtype=torch.bool)
    masks[:, 0, 0] = True
    return fg, masks, bg


def _engine(matrix, bg_labels, **kw):
    _, _, bg = _lookup_tensors(*matrix.shape)
    model = BgModel(_Lookup(matrix), ModelSpec(name="toy:lookup", arch="toy", num_classes=9, mean=(0, 0, 0),
                                               std=(1, 1, 1)))
    return ChallengeEngine(model, bg, torch.as_tensor(bg_labels), **kw)


def _verdicts(engine, matrix, fg_labels, out=None):
    fg, masks, _ = _lookup_tensors(*matrix.shape)
    results = engine.verdicts(fg, masks, fg_labels, range(len(fg_labels)), progress=False)
    fooled = np.zeros(len(fg_labels), bool)
    for r in results:
        fooled[r.index] = r.fooled
    assert (fooled == (matrix != fg_labels[:, None]).any(axis=1)).all()  # exact, however it was ordered
    if out is not None:
        out.extend(results)
    return fooled


@pytest.mark.parametrize("same_class", [False, True])
def test_a_background_that_fooled_once_is_tried_first_on_the_next_foreground(same_class):
    """One background fools every class-0 foreground; after the first finds it, each costs one pair.
    It may be a background of the foregrounds' own class (what fools a robust model need not be
    another class's background)."""
    n, b = 40, 300
    fg_labels = np.zeros(n, dtype=np.int64)
    bg_labels = np.arange(b) % 9
    fooler = 9 * 20 if same_class else 9 * 20 + 4  # class 0, or class 4
    matrix = np.zeros((n, b), dtype=np.int64)
    matrix[:, fooler] = 3
    engine, results = _engine(matrix, bg_labels, batch_size=1), []
    fooled = _verdicts(engine, matrix, fg_labels, results)
    assert fooled.all() and all(r.fooling_bg == fooler for r in results)
    assert results[0].pairs > 1  # the first one had to search
    assert [r.pairs for r in results[1:]] == [1] * (n - 1)  # position of the fooler in each later order
    assert engine.stats.pairs < b + n


def test_pairs_stay_near_the_minimum_on_a_mostly_robust_model():
    """Never-fooled foregrounds must see every background; fooled ones are fooled by the one
    background that fools their class (found blindly once, then learnt) and by two scattered
    ones each. Pairs stay within 5% of the minimum possible (never-fooled x backgrounds + 1 per
    fooled foreground); the learnt order is what makes this possible."""
    rng = np.random.default_rng(0)
    n, b = 540, 180
    fg_labels, bg_labels = np.arange(n) % 9, rng.permutation(np.arange(b) % 9)
    matrix = np.repeat(fg_labels[:, None], b, axis=1)
    strong = rng.choice(b, size=9, replace=False)
    for i in np.nonzero(rng.random(n) < 0.3)[0]:
        matrix[i, strong[fg_labels[i]]] = (fg_labels[i] + 1) % 9
        matrix[i, rng.choice(b, size=2)] = (fg_labels[i] + 2) % 9
    minimum = None
    for learn in (True, False):
        engine = _engine(matrix, bg_labels, batch_size=64)
        if not learn:  # the same engine with learning switched off: it keeps its initial order
            engine._learn = lambda *a: None
        fooled = _verdicts(engine, matrix, fg_labels)
        minimum = (~fooled).sum() * b + fooled.sum()
        assert 0.2 < fooled.mean() < 0.4
        if learn:
            assert engine.stats.pairs <= 1.05 * minimum, (engine.stats.pairs, minimum)
        else:
            assert engine.stats.pairs > 1.1 * minimum  # the test can fail


def test_spare_batch_room_goes_to_survivors_so_batches_stay_full(colour_root):
    """Few active foregrounds (a run's or a chunk's tail): once a foreground has survived
    `fill_after` backgrounds, its chunks grow to fill each batch."""
    layout = discover(colour_root, variants=["original", "only_bg_t"])
    pairs = layout.foregrounds()
    bg_items, bg = load_backgrounds(layout)
    fg, masks = load_foregrounds(layout, pairs, list(range(len(pairs))))
    labels = np.array([it.label for it, _ in pairs])
    bg_labels = torch.tensor([it.label for it in bg_items])
    survivor = next(i for i in range(len(pairs)) if masks[i].sum() >= 81)  # 9x9 squares outweigh every patch
    runs = {}
    for fill_after in (32, 10 ** 9):
        engine = ChallengeEngine(colour_model(), bg, bg_labels, batch_size=64, fill_after=fill_after)
        (r,) = engine.verdicts(fg, masks, labels, [survivor], progress=False)
        assert not r.fooled and engine.stats.pairs == len(bg)
        runs[fill_after] = engine.stats.batches
    # chunks 1, 2, 4, 8, 16, 32 (63 tried), then full batches of 64
    assert runs[32] == 6 + math.ceil((len(bg) - 63) / 64) < runs[10 ** 9]
