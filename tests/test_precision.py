"""bf16-verified: the decision margin, its guarantee, and verdicts equal to fp32 on near-ties (CPU)."""
import types

import numpy as np
import pytest
import torch
from torch import nn

from bgbench.classes import imagenet_to_in9
from bgbench.evaluation.challenge.engine import ChallengeEngine
from bgbench.evaluation.challenge.precision import VerifiedPredictor, decision_margin
from bgbench.evaluation.predict import decide
from bgbench.models.spec import IMAGENET1K, BgModel, ModelSpec
from challenge_toys import tie_model

TABLE = imagenet_to_in9()
DOG, DOG2, BIRD, NONE, NONE2 = 151, 152, 7, 25, 26
assert TABLE[DOG] == TABLE[DOG2] == 0 and TABLE[BIRD] == 1 and TABLE[NONE] == TABLE[NONE2] == -1


def _fake(label_space):
    return types.SimpleNamespace(spec=types.SimpleNamespace(label_space=label_space))


def test_margin_by_hand():
    m = decision_margin(torch.tensor([[1.0, 3.0, 2.0], [5.0, 5.0, 0.0]]), "dataset")
    assert m.tolist() == [1.0, 0.0]
    rows = torch.zeros(2, 1000)
    rows[0, [DOG, DOG2, BIRD, NONE]] = torch.tensor([5.0, 4.9, 3.0, 4.0])
    rows[1, [NONE, NONE2, DOG]] = torch.tensor([5.0, 4.95, 2.0])
    # row 0: the runner-up dog decides the same; the nearest rival is the unmapped class (-1 != dog)
    # row 1: unmapped wins; another unmapped class is no rival, the dog is
    assert decision_margin(rows, IMAGENET1K, "argmax").tolist() == pytest.approx([1.0, 3.0])
    sup = torch.full((1, 1000), -30.0)
    sup[0, [DOG, DOG2, BIRD, NONE]] = torch.tensor([1.0, 0.5, 1.2, 9.0])
    groups = [np.logaddexp.reduce(sup[0].numpy()[TABLE == c].astype(np.float64)) for c in range(9)]
    top2 = sorted(groups)[-2:]
    assert decision_margin(sup, IMAGENET1K, "superclass").item() == pytest.approx(top2[1] - top2[0], abs=1e-5)


@pytest.mark.parametrize("space, mapping, classes", [("dataset", "argmax", 9), (IMAGENET1K, "argmax", 1000),
                                                     (IMAGENET1K, "superclass", 1000)])
def test_a_margin_above_the_deviation_spread_guarantees_the_decision(space, mapping, classes):
    """For a perturbation d of the logits: margin(perturbed) > max(d) - min(d) => same decision.

    Half the rows get independent noise, half a large common shift plus small noise (the spread,
    not the largest absolute deviation, is what matters)."""
    g = torch.Generator().manual_seed(0)
    n, eps = 4000, 0.05
    logits = torch.randn(n, classes, generator=g) * 2
    # near-ties: lift a random rival to within a few eps of the top logit in most rows
    top = logits.max(dim=1).values
    rival = torch.randint(0, classes, (n,), generator=g)
    logits[torch.arange(n), rival] = top - torch.rand(n, generator=g) * 6 * eps
    d = (torch.rand(n, classes, generator=g) * 2 - 1) * eps
    d[n // 2:] = d[n // 2:] / 4 + 10 * eps * torch.randn(n - n // 2, 1, generator=g)
    perturbed = logits + d
    exact = decide(_fake(space), logits, mapping)[0]
    fast = decide(_fake(space), perturbed, mapping)[0]
    spread = d.max(dim=1).values - d.min(dim=1).values
    safe = decision_margin(perturbed, space, mapping) > spread
    assert (fast[safe] == exact[safe]).all()
    assert safe[n // 2:].float().mean() > safe[:n // 2].float().mean() > 0.3  # not vacuous
    assert (fast != exact).any()  # the perturbation does change decisions, all of them below the margin


def _tensors(size=8, n_fg=12, n_bg=24, seed=0):
    """Foregrounds (labels 0/1) and backgrounds whose composites have mean red near 0.5."""
    rng = np.random.default_rng(seed)
    fg = rng.integers(0, 256, size=(n_fg, size, size, 3), dtype=np.uint8)
    masks = np.zeros((n_fg, size, size), bool)
    for i in range(n_fg):
        a = 2 + i % 5
        masks[i, :a, :a] = True
        fg[i, :a, :a, 0] = 255 if i % 2 else 0
    bg = rng.integers(0, 256, size=(n_bg, size, size, 3), dtype=np.uint8)
    bg[..., 0] = np.clip(rng.normal(128, 6, size=(n_bg, 1, 1)), 0, 255).astype(np.uint8)
    labels = np.array([i % 2 for i in range(n_fg)])
    bg_labels = np.array([j % 2 for j in range(n_bg)])
    return (torch.from_numpy(fg), torch.from_numpy(masks), labels, torch.from_numpy(bg), torch.from_numpy(bg_labels))


def _engine_results(model, tensors, precision, mapping="argmax", batch_size=8):
    fg, masks, labels, bg, bg_labels = tensors
    engine = ChallengeEngine(model, bg, bg_labels, mapping=mapping, batch_size=batch_size, precision=precision)
    rows = np.stack([engine.full_row(fg[i], masks[i]) for i in range(len(fg))])
    fresh = ChallengeEngine(model, bg, bg_labels, mapping=mapping, batch_size=batch_size, precision=precision)
    verdicts = {r.index: r.fooled for r in fresh.verdicts(fg, masks, labels, range(len(fg)), progress=False)}
    return rows, verdicts, engine, fresh


@pytest.mark.parametrize("num_classes, classes, mapping", [(9, (0, 1), "argmax"), (1000, (DOG, BIRD), "argmax"),
                                                           (1000, (DOG, BIRD), "superclass")])
def test_verified_equals_fp32_on_composites_built_near_a_tie(num_classes, classes, mapping):
    tensors = _tensors()
    model = tie_model(8, classes=classes, num_classes=num_classes)
    rows32, verdicts32, *_ = _engine_results(model, tensors, "fp32", mapping)
    rows16, verdicts16, *_ = _engine_results(model, tensors, "bf16", mapping)
    rows_v, verdicts_v, engine, fresh = _engine_results(model, tensors, "bf16-verified", mapping)
    assert len(set(rows32.flatten().tolist())) == 2  # fp32 decides both classes: a real near-tie
    assert (rows16 != rows32).any() and verdicts16 != verdicts32  # plain bf16 gets them wrong
    assert (rows_v == rows32).all() and verdicts_v == verdicts32
    for e in (engine, fresh):
        st = e.verifier.stats
        assert st.rechecked > 0 and st.calibration > 0 and st.delta == pytest.approx(4.0 * st.calibration_deviation)
        assert not st.exceeded


def test_verified_rechecks_only_what_is_near_a_tie():
    """A model far from ties: nothing but calibration runs in fp32, and the predictions still match."""
    net = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 9))
    with torch.no_grad():
        net[1].weight.zero_()
        net[1].bias.copy_(torch.arange(9.0))
    model = BgModel(net, ModelSpec(name="toy:far", arch="toy", num_classes=9)).eval()
    tensors = _tensors()
    rows32, verdicts32, *_ = _engine_results(model, tensors, "fp32")
    rows_v, verdicts_v, engine, _ = _engine_results(model, tensors, "bf16-verified")
    assert (rows_v == rows32).all() and verdicts_v == verdicts32
    assert engine.verifier.stats.rechecked == 0 and engine.verifier.stats.composites == rows32.size


class _Scaled(nn.Module):
    """bf16 error grows with the input's brightness: calibrating on dark inputs underestimates it."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        with torch.no_grad():
            self.lin.weight.copy_(torch.tensor([[1000.0, 0, 0], [999.9, 0, 0]]))
            self.lin.bias.zero_()

    def forward(self, x):
        return self.lin(x.mean(dim=(2, 3)) + 0.001)


def test_audit_flags_a_deviation_beyond_the_calibrated_bound():
    model = BgModel(_Scaled(), ModelSpec(name="toy:scaled", arch="toy", num_classes=2, mean=(0, 0, 0),
                                         std=(1, 1, 1))).eval()
    warnings = []
    vp = VerifiedPredictor(model, calibration_batches=1, audit_every=1, warn=warnings.append)
    dark = torch.full((4, 3, 2, 2), 0.0)
    vp(dark)
    calibrated = vp.stats.delta
    bright = torch.rand(4, 3, 2, 2, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        exact = model(bright).argmax(1)
    assert (vp(bright) == exact).all()
    assert vp.stats.exceeded and len(warnings) == 1 and "not proven" in warnings[0]
    assert vp.stats.delta > calibrated and vp.stats.audited == 4
