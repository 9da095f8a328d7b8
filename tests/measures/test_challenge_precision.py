"""bf16-verified: the margin lemma, its measured premise, and runs that end with fp32's verdicts.

Every check compares with an fp32 oracle computed here, composite by composite, with the model's
plain forward (no bgbench code): upstream's arithmetic, B*(1-m) + F*m in float.
"""
import types

import numpy as np
import pytest
import torch
from torch import nn

from bgbench.classes import imagenet_to_in9
from bgbench.evaluation import numerics  # strict fp32 and the recorded settings
from bgbench.measures.challenge.engine import ChallengeEngine
from bgbench.evaluation.numerics import strict_fp32
from bgbench.measures.challenge.verified import NearTieLog, NearTies, VerifiedPredictor, decision_margin
from bgbench.measures.challenge.runner import ChallengeConfig
from bgbench.runs import run_challenge
from bgbench.evaluation.predict import decide
from bgbench.models.spec import IMAGENET1K, BgModel, ModelSpec
from bgbench.store import Store
from helpers.challenge_toys import (bright_tie_model, brightness_tensors, index_tensors, tie_model,
                                   write_brightness_dataset)

TABLE = imagenet_to_in9()
DOG, DOG2, BIRD, NONE, NONE2 = 151, 152, 7, 25, 26
assert TABLE[DOG] == TABLE[DOG2] == 0 and TABLE[BIRD] == 1 and TABLE[NONE] == TABLE[NONE2] == -1


pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


def _fake(label_space):
    return types.SimpleNamespace(spec=types.SimpleNamespace(label_space=label_space), class_map=None)


def fp32_matrix(model, fg, masks, bg, mapping="argmax"):
    """The oracle: every composite's fp32 prediction, one foreground at a time, in float."""
    rows = []
    with torch.inference_mode():
        for i in range(len(fg)):
            m = masks[i].float()[None].expand(3, -1, -1)
            x = bg.permute(0, 3, 1, 2).float() / 255 * (1 - m) + m * (fg[i].permute(2, 0, 1).float() / 255)
            rows.append(decide(model, model(x).float(), mapping)[0].numpy())
    return np.stack(rows)


def _fooled(results, n):
    got = np.zeros(n, bool)
    for r in results:
        got[r.index] = r.fooled
    return got


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
    """The lemma, with the true spread of each row: margin(perturbed) > max(d) - min(d) => same decision.

    Half the rows get independent noise, half a large common shift plus small noise (the spread,
    not the largest absolute deviation, is what matters). What the run knows is a *measured*
    bound on the spread, not the spread: `test_the_calibrated_bound_fails_on_inputs_it_did_not_see`."""
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


def test_the_calibrated_bound_fails_on_inputs_it_did_not_see_and_default_audits_catch_it():
    """Calibrated on dark inputs, delta is far below bf16's error on bright ones: there, bf16 decides
    the other class with a margin above delta (the premise fails). With the default audit rate the
    audits see it and raise delta until every wrong decision handed out lies within it, which is
    what lets the engine re-examine them all."""
    fg, masks, _, bg, _ = brightness_tensors()
    model = bright_tie_model()
    bright = torch.arange(len(bg)) % 4 >= 2
    x = torch.cat([torch.where(masks[i][None, ..., None], fg[i][None], bg[bright]) for i in range(len(fg))])
    x = x.permute(0, 3, 1, 2).float() / 255
    with torch.inference_mode():
        z32 = model(x)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            z16 = model(x).float()
    truth = z32.argmax(1)
    raised = []
    vp = VerifiedPredictor(model, warn=lambda msg: None, on_raise=raised.append)  # the default settings
    vp.calibrate(fg.permute(0, 3, 1, 2).float() / 255)  # the dark originals only
    calibrated = vp.delta
    bf16_margin = (z16[:, 0] - z16[:, 1]).abs()
    assert ((z16.argmax(1) != truth) & (bf16_margin > calibrated)).sum() > 20  # the premise fails
    out = [vp(x[s:s + 64]) for s in range(0, len(x), 64)]
    pred, margin = torch.cat([d.pred for d in out]), torch.cat([d.margin for d in out])
    assert vp.stats.breaches > 0 and vp.delta > calibrated and raised[-1] == vp.delta
    assert 0 < vp.stats.audited < len(x) / 20
    wrong = pred != truth
    assert not (wrong & (margin > vp.delta)).any()  # every wrong decision is within reach of the final delta
    assert (pred[torch.isinf(margin)] == truth[torch.isinf(margin)]).all()  # fp32 decided those


def test_near_ties_keep_what_a_raised_delta_can_reach_by_hand():
    """Foreground 0 decided four composites in bf16 (margins 0.5, 3, 1.5 and one fp32 decision),
    foreground 1 one (0.1). Keeping margins up to 2: (bg 1, 0.5) and (bg 4, 1.5); the floor of
    foreground 0 is 3, so a delta below 3 is settled by the near ties alone."""
    inf = float("inf")
    log = NearTieLog(2)
    log.add(torch.tensor([0, 0, 0, 0, 1]), torch.tensor([1, 2, 3, 4, 1]), torch.tensor([0.5, 3.0, inf, 1.5, 0.1]),
            keep_below=2.0)
    a, b = log.take(0), log.take(1)
    assert sorted(zip(a.bg.tolist(), a.margin.tolist())) == [(1, 0.5), (4, 1.5)] and a.floor == 3.0
    assert a.lowest() == 0.5 and a.at_most(1.6).tolist() == [1, 4] and a.at_most(0.4).tolist() == []
    assert not a.needs_search(2.9) and a.needs_search(3.0)
    assert a.settled(1.0).bg.tolist() == [4] and a.settled(1.0).floor == 3.0
    assert b.bg.tolist() == [1] and b.floor == inf and b.lowest() == pytest.approx(0.1)
    c = NearTies.from_json(a.to_json())
    assert (c.bg.tolist(), c.margin.tolist(), c.floor) == (a.bg.tolist(), a.margin.tolist(), a.floor)
    capped = NearTies(torch.arange(5), torch.tensor([5.0, 1.0, 4.0, 2.0, 3.0])).capped(2)
    assert capped.bg.tolist() == [1, 3] and capped.floor == 3.0  # the evicted 3.0 becomes the floor
    assert log.take(0).lowest() == 3.0  # taking twice: the ties were handed out, the floor stays


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
    rows = np.stack([r.row for r in engine.full_rows(fg, masks, labels, range(len(fg)))])
    fresh = ChallengeEngine(model, bg, bg_labels, mapping=mapping, batch_size=batch_size, precision=precision)
    verdicts = {r.index: r.fooled for r in fresh.verdicts(fg, masks, labels, range(len(fg)), progress=False)}
    return rows, verdicts, engine, fresh


@pytest.mark.parametrize("num_classes, classes, mapping", [(9, (0, 1), "argmax"), (1000, (DOG, BIRD), "argmax"),
                                                           (1000, (DOG, BIRD), "superclass")])
def test_verified_equals_fp32_on_composites_built_near_a_tie(num_classes, classes, mapping):
    tensors = _tensors()
    fg, masks, labels, bg, _ = tensors
    model = tie_model(8, classes=classes, num_classes=num_classes)
    oracle = fp32_matrix(model, fg, masks, bg, mapping)
    rows16, verdicts16, *_ = _engine_results(model, tensors, "bf16", mapping)
    rows_v, verdicts_v, engine, fresh = _engine_results(model, tensors, "bf16-verified", mapping)
    assert len(set(oracle.flatten().tolist())) == 2  # fp32 decides both classes: a real near-tie
    expected = {i: bool(f) for i, f in enumerate((oracle != labels[:, None]).any(axis=1))}
    assert (rows16 != oracle).any() and verdicts16 != expected  # plain bf16 gets them wrong
    assert (rows_v == oracle).all() and verdicts_v == expected
    for e in (engine, fresh):
        st = e.verifier.stats
        assert st.rechecked > 0 and st.calibration > 0 and st.delta >= st.max_spread > 0


def test_verified_rechecks_only_what_is_near_a_tie():
    """A model far from ties: nothing is rechecked in fp32, and the predictions still match."""
    net = nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 9))
    with torch.no_grad():
        net[1].weight.zero_()
        net[1].bias.copy_(torch.arange(9.0))
    model = BgModel(net, ModelSpec(name="toy:far", arch="toy", num_classes=9)).eval()
    tensors = _tensors()
    fg, masks, labels, bg, _ = tensors
    oracle = fp32_matrix(model, fg, masks, bg)
    rows_v, verdicts_v, engine, _ = _engine_results(model, tensors, "bf16-verified")
    assert (rows_v == oracle).all()
    assert verdicts_v == {i: bool(f) for i, f in enumerate((oracle != labels[:, None]).any(axis=1))}
    assert engine.verifier.stats.rechecked == 0 and engine.verifier.stats.composites == oracle.size


class _Glitch(nn.Module):
    """Predicts matrix[i, j] for the composite of foreground i and background j (their indices in
    pixels 0 and 1, as in test_challenge_engine), with a margin of 10; under bf16 autocast, the
    composites in `glitches` are predicted as class 8 instead: a rare bf16 failure, far above any
    delta, that neither calibration nor the audits are likely to meet."""

    def __init__(self, matrix, glitches):
        super().__init__()
        self.matrix = torch.as_tensor(matrix, dtype=torch.long)
        self.glitch = torch.zeros(self.matrix.shape, dtype=torch.bool)
        for i, j in glitches:
            self.glitch[i, j] = True

    def forward(self, x):
        v = (x * 255).round().long()
        i, j = v[:, 0, 0, 0] + 256 * v[:, 1, 0, 0], v[:, 0, 0, 1] + 256 * v[:, 1, 0, 1]
        pred = self.matrix[i, j]
        if torch.is_autocast_enabled("cpu"):
            pred = torch.where(self.glitch[i, j], torch.full_like(pred, 8), pred)
        return 10 * nn.functional.one_hot(pred, 9).float()


def test_a_fooled_verdict_is_confirmed_in_fp32_and_the_search_goes_on():
    """bf16 'fools' survivors on a few composites with a margin of 10 (delta is 0: the logits are
    exact in bf16). Each such verdict is recomputed in fp32, overturned, and the search goes on: to
    the end for a survivor, to its real fooling background for a fooled foreground."""
    n, b = 100, 100
    rng = np.random.default_rng(0)
    labels, bg_labels = np.arange(n) % 8, np.arange(b) % 8
    matrix = np.repeat(labels[:, None], b, axis=1)
    fooled_fg = rng.choice(n, size=20, replace=False)
    for i in fooled_fg:
        matrix[i, rng.choice(b, size=2, replace=False)] = (labels[i] + 1) % 8
    survivors = np.setdiff1d(np.arange(n), fooled_fg)
    decoy = int(fooled_fg[0])  # fooled for real, and 'fooled' by bf16 on three more composites
    glitches = [(int(i), int(rng.integers(b))) for i in survivors[:3]] + \
        [(decoy, int(j)) for j in rng.choice(np.nonzero(matrix[decoy] == labels[decoy])[0], size=3, replace=False)]
    model = BgModel(_Glitch(matrix, glitches), ModelSpec(name="toy:glitch", arch="toy", num_classes=9,
                                                         mean=(0, 0, 0), std=(1, 1, 1))).eval()
    fg, masks, bg = index_tensors(n, b)
    oracle = fp32_matrix(model, fg, masks, bg)
    assert (oracle == matrix).all()
    engine = ChallengeEngine(model, bg, torch.as_tensor(bg_labels), batch_size=16, precision="bf16-verified")
    results = engine.verdicts(fg, masks, labels, range(n), progress=False)
    assert (_fooled(results, n) == (matrix != labels[:, None]).any(axis=1)).all()
    for r in results:
        if r.fooled:  # the reported fooling background really fools, in fp32
            assert matrix[r.index, r.fooling_bg] == r.fooling_pred != labels[r.index]
    st = engine.verifier.stats
    assert st.overturned >= 3 and st.confirmed >= st.overturned + len(fooled_fg)
    # a full row's first fooling entry is confirmed too: the survivors' rows come out exact, the
    # fooled verdicts name a real fooler (the decoy's later glitches are entries as good as the audits)
    rows = engine.full_rows(fg, masks, labels, range(n))
    assert (_fooled(rows, n) == (matrix != labels[:, None]).any(axis=1)).all()
    assert all((r.row == oracle[r.index]).all() for r in rows if not r.fooled)
    assert all(oracle[r.index, r.fooling_bg] == r.fooling_pred != labels[r.index] for r in rows if r.fooled)


def test_verdicts_are_fp32_when_calibration_missed_the_bright_inputs():
    """An unlucky calibration (the dark originals only) leaves delta far below bf16's error on the
    bright composites. The audits find it, delta rises, and the survivors whose kept margins it
    reaches are re-examined: verdicts and full rows end equal to the exhaustive fp32 ones."""
    fg, masks, labels, bg, bg_labels = brightness_tensors()
    model = bright_tie_model()
    oracle = fp32_matrix(model, fg, masks, bg)
    expected = (oracle != labels[:, None]).any(axis=1)
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        plain = np.stack([model(torch.where(masks[i][None, ..., None], fg[i][None], bg).permute(0, 3, 1, 2).float()
                                / 255).argmax(1).numpy() for i in range(len(fg))])
    assert ((plain != labels[:, None]).any(axis=1) != expected).sum() > 5  # plain bf16 verdicts are wrong
    for mode in ("verdicts", "full_rows"):
        engine = ChallengeEngine(model, bg, bg_labels, batch_size=16, precision="bf16-verified")
        engine.verifier.predictor.calibrate(fg.permute(0, 3, 1, 2).float() / 255)
        results = (engine.verdicts(fg, masks, labels, range(len(fg)), progress=False) if mode == "verdicts"
                   else engine.full_rows(fg, masks, labels, range(len(fg))))
        assert (_fooled(results, len(fg)) == expected).all(), mode
        st = engine.verifier.stats
        assert st.breaches > 0 and st.reexamined + st.researched > 0, mode
        if mode == "full_rows":
            assert (np.stack([r.row for r in results]) == oracle).all()


def _stored_verdicts(store, run_id):
    return {r["image_id"]: bool(r["fooled"]) for r in store.challenge_results(run_id)}


def _files(root, variant, suffix):
    return sorted((root / variant / "val").glob(f"*/*{suffix}"))


def fp32_oracle_from_files(model, root):
    """The exhaustive fp32 verdicts of a dataset on disk, read with PIL and numpy alone, and the
    prediction matrix (foregrounds and backgrounds in sorted path order)."""
    from PIL import Image
    load = lambda path: torch.from_numpy(np.asarray(Image.open(path).convert("RGB")).copy())  # noqa: E731
    fg_paths = _files(root, "original", ".png")
    fg = torch.stack([load(p) for p in fg_paths])
    masks = torch.from_numpy(np.stack([np.load(root / "fg_mask" / "val" / p.parent.name / f"{p.stem}.npy") > 0
                                       for p in fg_paths]))
    bg = torch.stack([load(p) for p in _files(root, "only_bg_t", ".png")])
    classes = sorted(p.name for p in (root / "original" / "val").iterdir())
    labels = np.array([classes.index(p.parent.name) for p in fg_paths])
    matrix = fp32_matrix(model, fg, masks, bg)
    fooled = (matrix != labels[:, None]).any(axis=1)
    return {f"{p.parent.name}/{p.stem}": bool(f) for p, f in zip(fg_paths, fooled)}, matrix


@pytest.mark.parametrize("full", [False, True])
def test_a_bf16_verified_run_ends_with_the_fp32_verdicts(tmp_path, full):
    """The challenge as the command runs it, default settings, on data whose originals are dark and
    half of whose backgrounds are bright (a delta measured on the originals misses bf16's error)."""
    root = write_brightness_dataset(tmp_path / "data")
    model = bright_tie_model()
    expected, matrix = fp32_oracle_from_files(model, root)
    with Store(tmp_path / "r.db") as store:
        rep = run_challenge(model, root, store, ChallengeConfig(batch_size=16, precision="bf16-verified", full=full),
                            progress=False)
        assert _stored_verdicts(store, rep.run_id) == expected
        if full:  # the stored rows, in the oracle's (the dataset's) order
            ids = sorted(r["image_id"] for r in store.challenge_results(rep.run_id))
            assert (store.challenge_matrix(rep.run_id, ids) == matrix).all()
    p = rep.precision
    assert p["calibration"] > 0 and p["audited"] > 0 and p["delta"] >= p["max_spread"] > 0
    assert rep.numerics["precision"] == "bf16-verified" and rep.numerics["fp32"].startswith("strict")


def test_a_resumed_run_keeps_its_audits_and_reexamines_what_a_raised_delta_reaches(tmp_path):
    """A run killed after an audit raised delta, before its survivors were re-examined, is
    simulated by storing the raised delta as the audit does; the next invocation restores it,
    re-examines every stored survivor it reaches, and still ends with fp32's verdicts. Its audit
    counts carry over."""
    from helpers.challenge_toys import colour_model, write_colour_dataset
    root = write_colour_dataset(tmp_path / "data", per_class=5, size=16, seed=0)
    model = colour_model()
    expected, _ = fp32_oracle_from_files(model, root)
    cfg = dict(batch_size=32, precision="bf16-verified", seed=1)
    with Store(tmp_path / "r.db") as store:
        first = run_challenge(model, root, store, ChallengeConfig(sample=18, **cfg), progress=False)
        state = store.challenge_state(first.run_id)
        assert state["calibration"] == first.precision["calibration"] > 0
        survivors = [i for i, f in _stored_verdicts(store, first.run_id).items() if not f]
        assert survivors and first.precision["delta"] < 1
        store.raise_challenge_delta(first.run_id, 1e3)  # what the killed run stored when its audit raised delta
        store.add_challenge_results(first.run_id, [], [], state)  # a later, smaller delta never lowers it
        assert store.challenge_state(first.run_id) == {**state, "delta": 1e3}
        second = run_challenge(model, root, store, ChallengeConfig(**cfg), progress=False)
        assert second.run_id == first.run_id
        assert _stored_verdicts(store, second.run_id) == expected
    p = second.precision
    assert p["delta"] == 1e3 and p["calibration"] == first.precision["calibration"]
    assert p["audited"] >= first.precision["audited"] and p["composites"] > first.precision["composites"]
    assert p["reexamined"] + p["researched"] >= len(survivors)


@pytest.fixture
def user_fp32_settings():
    """The test's own TF32 settings (as a user may set them), and the session's back afterwards."""
    knobs = {p: numerics._knob(p) for p in ("cuda.matmul", "cudnn.conv", "cudnn.rnn", "mkldnn.matmul",
                                             "mkldnn.conv", "mkldnn.rnn")}
    saved = {p: k.fp32_precision for p, k in knobs.items()}
    mine = {"cuda.matmul": "tf32", "cudnn.conv": "tf32", "cudnn.rnn": "tf32", "mkldnn.matmul": "bf16",
            "mkldnn.conv": "bf16", "mkldnn.rnn": "none"}
    for p, value in mine.items():
        knobs[p].fp32_precision = value
    yield knobs, mine
    for p, value in saved.items():
        knobs[p].fp32_precision = value


class _Spy(nn.Module):
    """Records, at every forward, whether it ran in autocast and the fp32 precision of each backend."""

    def __init__(self, knobs):
        super().__init__()
        self.knobs = knobs
        self.lin = nn.Linear(3, 2)
        self.seen = []

    def forward(self, x):
        self.seen.append((torch.is_autocast_enabled("cpu"), {p: k.fp32_precision for p, k in self.knobs.items()}))
        return self.lin(x.mean(dim=(2, 3)))


@pytest.mark.parametrize("precision_name", ["fp32", "bf16-verified"])
def test_every_fp32_forward_runs_without_tf32_and_the_user_settings_come_back(user_fp32_settings, precision_name):
    knobs, mine = user_fp32_settings
    spy = _Spy(knobs)
    model = BgModel(spy, ModelSpec(name="toy:spy", arch="toy", num_classes=2, mean=(0, 0, 0), std=(1, 1, 1))).eval()
    fg, masks, labels, bg, bg_labels = brightness_tensors(per_class=4, bg_per_class=8)
    engine = ChallengeEngine(model, bg, bg_labels, batch_size=8, precision=precision_name)
    engine.verdicts(fg, masks, labels, range(len(fg)), progress=False)
    engine.predict_uint8(fg)
    fp32_calls = [settings for autocast, settings in spy.seen if not autocast]
    assert fp32_calls and all(set(s.values()) == {"ieee"} for s in fp32_calls)
    assert {p: k.fp32_precision for p, k in knobs.items()} == mine  # restored
    assert engine.numerics()["user_fp32_settings"] == mine  # and recorded


def test_tf32_forwards_use_tf32_on_cuda_only_and_the_user_settings_come_back(user_fp32_settings):
    """--precision tf32: every forward runs with cuBLAS and cuDNN at TF32 and oneDNN exact (the CPU
    has no TF32), whatever the user had set; the user's settings are back afterwards. (The engine
    is driven on the CPU here, where the config would refuse tf32: the settings are what is tested.)"""
    knobs, mine = user_fp32_settings
    knobs["cuda.matmul"].fp32_precision = "ieee"  # the user's exact matmuls are still made TF32 inside
    mine = {**mine, "cuda.matmul": "ieee"}
    spy = _Spy(knobs)
    model = BgModel(spy, ModelSpec(name="toy:spy", arch="toy", num_classes=2, mean=(0, 0, 0), std=(1, 1, 1))).eval()
    fg, masks, labels, bg, bg_labels = brightness_tensors(per_class=4, bg_per_class=8)
    engine = ChallengeEngine(model, bg, bg_labels, batch_size=8, precision="tf32")
    engine.verdicts(fg, masks, labels, range(len(fg)), progress=False)
    want = {p: "tf32" if p.startswith(("cuda.", "cudnn.")) else "ieee" for p in knobs}
    assert spy.seen and all(not autocast and settings == want for autocast, settings in spy.seen)
    assert {p: k.fp32_precision for p, k in knobs.items()} == mine


def test_strict_fp32_with_the_legacy_flags(monkeypatch):
    """Before PyTorch's per-backend API (mocked: this PyTorch refuses to mix the two): allow_tf32
    off for cuBLAS and cuDNN and matmul precision 'highest' inside, the user's flags after."""
    flags = types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=True),
                                  cudnn=types.SimpleNamespace(allow_tf32=True), precision="medium")
    monkeypatch.setattr(numerics, "_knobs", lambda: {})
    monkeypatch.setattr(torch.backends.cuda, "matmul", flags.matmul)
    monkeypatch.setattr(torch.backends, "cudnn", flags.cudnn)
    monkeypatch.setattr(torch, "get_float32_matmul_precision", lambda: flags.precision)
    monkeypatch.setattr(torch, "set_float32_matmul_precision", lambda value: setattr(flags, "precision", value))
    assert numerics.fp32_settings() == {"cuda.matmul.allow_tf32": True, "cudnn.allow_tf32": True,
                                         "float32_matmul_precision": "medium"}
    with strict_fp32():
        assert (flags.matmul.allow_tf32, flags.cudnn.allow_tf32, flags.precision) == (False, False, "highest")
    assert (flags.matmul.allow_tf32, flags.cudnn.allow_tf32, flags.precision) == (True, True, "medium")
    with pytest.raises(ValueError), strict_fp32():  # restored when the forward fails too
        raise ValueError
    assert (flags.matmul.allow_tf32, flags.cudnn.allow_tf32, flags.precision) == (True, True, "medium")


def test_a_reduced_precision_run_that_is_slower_than_fp32_says_so(synth_root, tmp_path, monkeypatch):
    """The note follows the measured ratio, for the challenge and for eval alike: forced above 1 it
    is printed once, below 1 not at all; the real measurement is a positive ratio."""
    from conftest import run_cli
    net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 9))
    assert numerics.bf16_slowdown(net, torch.rand(4, 3, 32, 32)) > 0
    common = ["--model", "timm:test_resnet", "--data", synth_root, "--db", tmp_path / "r.db", "--quiet"]
    for args in (["challenge", *common, "--sample", 2, "--precision", "bf16-verified"],
                 ["eval", *common, "--precision", "bf16"]):
        monkeypatch.setattr(numerics, "bf16_slowdown", lambda model, x, repeats=2: 5.25)
        proc = run_cli(*args)
        assert proc.returncode == 0, proc.stderr
        notes = [ln for ln in proc.stderr.splitlines() if "a bf16 forward takes" in ln]
        assert len(notes) == 1 and "5.2x an fp32 one" in notes[0] and "not native" in notes[0], proc.stderr
        monkeypatch.setattr(numerics, "bf16_slowdown", lambda model, x, repeats=2: 0.5)
        assert "a bf16 forward takes" not in run_cli(*args, "--rerun").stderr
