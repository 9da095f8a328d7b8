"""The challenge engine's pair efficiency: learnt ordering and full batches (verdicts stay exact).

The oracle is a hand-made prediction matrix: a lookup model predicts matrix[i, j] for the composite
of foreground i and background j, so the exhaustive verdicts are read off the matrix, and the
fewest pairs any search can evaluate is never-fooled x backgrounds + 1 per fooled foreground.
"""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from bgbench.data.in9 import discover
from bgbench.measures.challenge.engine import ChallengeEngine
from bgbench.measures.challenge.runner import load_backgrounds, load_foregrounds
from bgbench.models.spec import BgModel, ModelSpec
from helpers.challenge_toys import colour_model, index_tensors, write_colour_dataset


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


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


def _lookup_model(matrix):
    return BgModel(_Lookup(matrix), ModelSpec(name="toy:lookup", arch="toy", num_classes=9, mean=(0, 0, 0),
                                              std=(1, 1, 1))).eval()


def _engine(matrix, bg_labels, **kw):
    _, _, bg = index_tensors(*matrix.shape)
    return ChallengeEngine(_lookup_model(matrix), bg, torch.as_tensor(bg_labels), **kw)


def _verdicts(engine, matrix, fg_labels, out=None, order=None):
    fg, masks, _ = index_tensors(*matrix.shape)
    results = engine.verdicts(fg, masks, fg_labels, range(len(fg_labels)) if order is None else order,
                              progress=False)
    fooled = np.zeros(len(fg_labels), bool)
    for r in results:
        fooled[r.index] = r.fooled
    assert (fooled == (matrix != fg_labels[:, None]).any(axis=1)).all()  # exact, however it was ordered
    if out is not None:
        out.extend(results)
    return fooled


def minimum_pairs(matrix, fg_labels):
    """Never-fooled foregrounds see every background; a fooled one needs at least one composite."""
    fooled = (matrix != fg_labels[:, None]).any(axis=1)
    return int((~fooled).sum()) * matrix.shape[1] + int(fooled.sum())


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


@pytest.mark.parametrize("precision", ["fp32", "bf16-verified"])
def test_pairs_stay_near_the_minimum_on_a_mostly_robust_model(precision):
    """Never-fooled foregrounds must see every background; fooled ones are fooled by the one
    background that fools their class (found blindly once, then learnt) and by two scattered
    ones each. Pairs stay within 5% of the minimum possible; the learnt order is what makes this
    possible. bf16-verified's fp32 confirmations of fooling composites are recomputations, not
    extra pairs."""
    rng = np.random.default_rng(0)
    n, b = 540, 180
    fg_labels, bg_labels = np.arange(n) % 9, rng.permutation(np.arange(b) % 9)
    matrix = np.repeat(fg_labels[:, None], b, axis=1)
    strong = rng.choice(b, size=9, replace=False)
    for i in np.nonzero(rng.random(n) < 0.3)[0]:
        matrix[i, strong[fg_labels[i]]] = (fg_labels[i] + 1) % 9
        matrix[i, rng.choice(b, size=2)] = (fg_labels[i] + 2) % 9
    minimum = minimum_pairs(matrix, fg_labels)
    assert 0.2 < (matrix != fg_labels[:, None]).any(axis=1).mean() < 0.4
    for learn in (True, False) if precision == "fp32" else (True,):
        engine = _engine(matrix, bg_labels, batch_size=64, precision=precision)
        if not learn:  # the same engine with learning switched off: it keeps its initial order
            engine.learn = lambda *a: None
        _verdicts(engine, matrix, fg_labels)
        if learn:
            assert engine.stats.pairs <= 1.05 * minimum, (engine.stats.pairs, minimum)
        else:
            assert engine.stats.pairs > 1.1 * minimum  # the test can fail


class _BatchSizes(nn.Module):
    """Wraps a model and records the size of every batch it is given."""

    def __init__(self, net):
        super().__init__()
        self.net = net
        self.sizes = []

    def forward(self, x):
        self.sizes.append(len(x))
        return self.net(x)


def test_spare_batch_room_goes_to_survivors_so_batches_stay_full(colour_root):
    """One foreground alone (a run's or a chunk's tail). It is never fooled: its 9x9 square
    outweighs every background's patch (at most 8x8), so it must see every background. Once it has
    tried `fill_after` backgrounds, every batch is full but the last; without that rule its batches
    never exceed its chunk."""
    layout = discover(colour_root, variants=["original", "only_bg_t"])
    pairs = layout.foregrounds()
    bg_items, bg = load_backgrounds(layout)
    fg, masks = load_foregrounds(pairs, list(range(len(pairs))))
    labels = np.array([it.label for it, _ in pairs])
    bg_labels = torch.tensor([it.label for it in bg_items])
    survivor = next(i for i in range(len(pairs)) if masks[i].sum() >= 81)
    batch, fill_after, max_chunk = 64, 20, 16
    sizes = {}
    for rule in (fill_after, 10 ** 9):
        model = colour_model()
        spy = model.net = _BatchSizes(model.net)
        engine = ChallengeEngine(model, bg, bg_labels, batch_size=batch, fill_after=rule, max_chunk=max_chunk)
        (r,) = engine.verdicts(fg, masks, labels, [survivor], progress=False)
        assert not r.fooled and r.pairs == len(bg) == sum(spy.sizes)
        sizes[rule] = spy.sizes
    tried = np.cumsum([0] + sizes[fill_after][:-1])  # backgrounds tried before each batch
    after = [s for s, t in zip(sizes[fill_after][:-1], tried[:-1]) if t >= fill_after]
    assert after and set(after) == {batch}
    assert max(sizes[10 ** 9]) <= max_chunk and len(sizes[10 ** 9]) > len(sizes[fill_after])


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 30), b=st.integers(1, 40), batch_size=st.integers(1, 50), fill_after=st.integers(0, 40),
       adapt_until=st.integers(1, 60), seed=st.integers(0, 2 ** 16), fool_rate=st.floats(0, 0.2),
       precision=st.sampled_from(["fp32", "bf16-verified"]), reverse=st.booleans())
def test_verdicts_equal_the_matrix_for_any_batching(n, b, batch_size, fill_after, adapt_until, seed, fool_rate,
                                                    precision, reverse):
    """Against the exhaustive reference (the matrix): the verdict of every foreground, a real fooling
    background for each fooled one, and every background tried by each survivor, whatever the
    batch size, spare-room rule, adaptive span, seed, precision or order of the foregrounds."""
    rng = np.random.default_rng(seed)
    fg_labels, bg_labels = rng.integers(0, 9, size=n), rng.integers(0, 9, size=b)
    matrix = np.repeat(fg_labels[:, None], b, axis=1)
    wrong = rng.random((n, b)) < fool_rate
    matrix[wrong] = rng.integers(0, 9, size=int(wrong.sum()))
    engine = _engine(matrix, bg_labels, batch_size=batch_size, fill_after=fill_after, adapt_until=adapt_until,
                     seed=seed, precision=precision)
    results = []
    _verdicts(engine, matrix, fg_labels, results, order=list(range(n))[::-1] if reverse else None)
    assert sorted(r.index for r in results) == list(range(n))
    for r in results:
        if r.fooled:
            assert matrix[r.index, r.fooling_bg] == r.fooling_pred != fg_labels[r.index] and 1 <= r.pairs <= b
        else:
            assert r.pairs == b
    assert engine.stats.pairs >= minimum_pairs(matrix, fg_labels)


def _search_record(matrix, fg_labels, bg_labels, speculate, **kw):
    """Everything a search decides and counts: each verdict as it was handed out, in order, and the
    engine's pairs, batches, learnt counts and wasted composites."""
    engine = _engine(matrix, bg_labels, speculate=speculate, **kw)
    given = []
    fg, masks, _ = index_tensors(*matrix.shape)
    engine.verdicts(fg, masks, fg_labels, range(len(fg_labels)), on_result=given.append, progress=False)
    verdicts = [(r.index, r.fooled, r.pairs, r.fooling_bg, r.fooling_pred) for r in given]
    counts = [t.tolist() for t in (engine.tries, engine.class_tries, engine.fool_counts, engine.class_fool_counts)]
    return verdicts, (engine.stats.pairs, engine.stats.batches, counts), engine.stats.wasted


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 30), b=st.integers(1, 60), batch_size=st.integers(1, 40), seed=st.integers(0, 2 ** 16),
       fool_rate=st.floats(0, 0.05), precision=st.sampled_from(["fp32", "bf16-verified"]))
def test_speculating_on_the_next_batch_changes_nothing_but_the_work(n, b, batch_size, seed, fool_rate, precision):
    """A search that launches each next batch before the last one's results are back (what it does
    on CUDA, forced here on the CPU) hands out the same verdicts in the same order, evaluates the
    same pairs in the same batches and learns the same counts as one that waits."""
    rng = np.random.default_rng(seed)
    fg_labels, bg_labels = rng.integers(0, 9, size=n), rng.integers(0, 9, size=b)
    matrix = np.repeat(fg_labels[:, None], b, axis=1)
    wrong = rng.random((n, b)) < fool_rate
    matrix[wrong] = (fg_labels[:, None].repeat(b, axis=1)[wrong] + 1) % 9
    kw = dict(batch_size=batch_size, seed=seed, precision=precision, adapt_until=16, fill_after=8)
    waits, speculates = (_search_record(matrix, fg_labels, bg_labels, flag, **kw) for flag in (False, True))
    assert speculates[:2] == waits[:2]
    assert waits[2] == 0


def test_a_speculative_batch_is_thrown_away_when_its_guess_was_wrong():
    """Survivors, then a foreground fooled late: the batch launched on the guess that nothing fooled
    is thrown away (counted as wasted, not as pairs) and the search goes on from what happened."""
    n, b = 12, 200
    fg_labels, bg_labels = np.zeros(n, dtype=np.int64), np.arange(b) % 9
    matrix = np.zeros((n, b), dtype=np.int64)
    matrix[3, 150] = 4  # one foreground fooled, by a background it meets late
    waits = _search_record(matrix, fg_labels, bg_labels, False, batch_size=16)
    speculates = _search_record(matrix, fg_labels, bg_labels, True, batch_size=16)
    assert speculates[:2] == waits[:2]
    assert speculates[2] > 0 and waits[2] == 0
    assert [(v[0], v[3], v[4]) for v in speculates[0] if v[1]] == [(3, 150, 4)]
