"""The noise probe against oracles that do not use bgbench's own code: accuracies and RFS worked
by hand, an independent bootstrap written here, RIVAL10's grids, and the CLI end to end."""
import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
import torch

from bgbench.measures.noise import MEASURE as NOISE
from bgbench.measures.noise.probe import NoiseConfig
from bgbench.measures.noise.summary import NoiseRow, summarize
from bgbench.measures.common.regions import Region, object_regions
from bgbench.measures.noise.engine import REGIONS, draw_seed, region_noise, region_predictions
from bgbench.errors import BgbenchError
from bgbench.store import Store
from bgbench.runs import run_measure
from conftest import assert_one_line_error, run_cli


def _strict_json(text):
    """json.loads that refuses NaN/Infinity, as a strict JSON reader would."""
    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")
    return json.loads(text, parse_constant=refuse)


# ----------------------------------------------------------------------------------------------
# noise: the engine

def _left_half(n=2, h=8, w=8):
    m = torch.zeros(n, 1, h, w)
    m[..., : w // 2] = 1
    return m


def test_region_noise_stays_in_its_region_and_l2_hits_the_level():
    m = _left_half()
    fg = region_noise(m, "fg", 0.5, "sigma", 3, [1, 2])
    bg = region_noise(m, "bg", 0.5, "sigma", 3, [1, 2])
    attr = region_noise(m, "attr:left", 0.5, "sigma", 3, [1, 2])  # an attribute's mask: noise on it, as fg
    assert fg.shape == (3, 2, 3, 8, 8) and torch.equal(attr, fg)
    assert (fg[..., 4:] == 0).all() and (fg[..., :4] != 0).all()
    assert (bg[..., :4] == 0).all() and (bg[..., 4:] != 0).all()
    # RIVAL10's L2 noise: the masked noise over all channels of an image scaled to norm `level`
    l2 = region_noise(m, "bg", 25.0, "l2", 3, [1, 2])
    norms = np.sqrt((l2.numpy() ** 2).reshape(3, 2, -1).sum(axis=2))
    assert norms == pytest.approx(np.full((3, 2), 25.0), rel=1e-5)


def _oracle_draw(seed, trials, h, w):
    """The generator written here from its definition, value by value in Python integers: value i
    of a (trials, H, W, 3) draw is the standard normal quantile at (j + 0.5) / 2^20, j the top 20
    bits of lowbias32(lowbias32(i ^ k0) ^ k1), k0 and k1 the seed's low and high 32 bits; the
    quantile from the standard library (`statistics.NormalDist`), not scipy."""
    from statistics import NormalDist

    def lowbias32(v):
        v ^= v >> 16
        v = (v * 0x7FEB352D) & 0xFFFFFFFF
        v ^= v >> 15
        v = (v * 0x846CA68B) & 0xFFFFFFFF
        return v ^ (v >> 16)
    k0, k1 = seed & 0xFFFFFFFF, seed >> 32
    normal = NormalDist()
    values = [normal.inv_cdf(((lowbias32(lowbias32(i ^ k0) ^ k1) >> 12) + 0.5) / 2 ** 20)
              for i in range(trials * h * w * 3)]
    return np.array(values, dtype=np.float32).reshape(trials, h, w, 3)


def test_each_images_noise_is_its_own_seeded_draw():
    """Image k's noise is the counter-based draw (trials, H, W, 3) of its own seed (the oracle:
    `_oracle_draw`), channels moved first, times sigma: the same whatever images share its batch
    (and drawn again without torch by the report)."""
    m = torch.ones(3, 1, 4, 5)
    big = 2 ** 62 + 12345  # a seed with both halves set
    both = region_noise(m, "fg", 0.5, "sigma", 2, [7, big, 7])
    alone = region_noise(m[:1], "fg", 0.5, "sigma", 2, [big])
    expected = torch.from_numpy(_oracle_draw(big, 2, 4, 5)).permute(0, 3, 1, 2) * 0.5
    assert torch.allclose(both[:, 1], expected, rtol=1e-6, atol=0) and torch.equal(alone[:, 0], both[:, 1])
    assert torch.equal(both[:, 0], both[:, 2]) and not torch.equal(both[:, 0], both[:, 1])
    # the seed names the run's seed, the image, the region and the level: change any, change the draw
    seeds = {draw_seed(0, "a/1", "fg", 0.5), draw_seed(1, "a/1", "fg", 0.5), draw_seed(0, "a/2", "fg", 0.5),
             draw_seed(0, "a/1", "bg", 0.5), draw_seed(0, "a/1", "fg", 0.25)}
    assert len(seeds) == 5 and all(0 <= s < 2 ** 63 for s in seeds)


@settings(max_examples=25, deadline=None)
@given(seeds=st.lists(st.integers(0, 2 ** 63 - 1), min_size=1, max_size=4), trials=st.integers(1, 3),
       h=st.integers(1, 9), w=st.integers(1, 9))
def test_the_devices_draws_are_numpys_bit_for_bit(seeds, trials, h, w):
    """`device_draws` (torch's int32 arithmetic, which a card runs) gives numpy's uint32 draws of
    every seed exactly, any seed, shape or number of images; on the meta device, their shape."""
    from bgbench.measures.noise.engine import device_draws, device_keys
    from bgbench.measures.noise.draws import image_noise
    made = device_draws(device_keys(seeds, torch.device("cpu")), trials, h, w)
    expected = np.stack([image_noise(s, trials, h, w) for s in seeds], axis=1)
    assert made.dtype == torch.float32 and np.array_equal(made.numpy(), expected)
    assert device_draws(device_keys(seeds, torch.device("meta")), trials, h, w).shape == expected.shape


def test_the_draws_are_standard_normal_and_independent():
    """Half a million values of one draw pass a Kolmogorov-Smirnov test against N(0, 1); neighbouring
    values, the trials of one draw and the draws of two seeds are uncorrelated; every one of the 20
    bits that pick a quantile is set half the time (a hash that left a bit fixed would fail)."""
    from scipy import stats
    from bgbench.measures.noise.draws import image_noise
    a = image_noise(draw_seed(0, "c/1", "object", 0.5), 3, 224, 224).ravel().astype(np.float64)
    b = image_noise(draw_seed(0, "c/2", "object", 0.5), 3, 224, 224).ravel().astype(np.float64)
    assert stats.kstest(a, "norm").pvalue > 1e-3
    assert abs(a.mean()) < 0.01 and abs(a.std() - 1) < 0.01 and abs(stats.kurtosis(a)) < 0.05
    for x, y in ((a[:-1], a[1:]), (a[:-3], a[3:]), (a[:a.size // 3], a[a.size // 3:2 * (a.size // 3)]), (a, b)):
        assert abs(np.corrcoef(x, y)[0, 1]) < 0.01
    j = np.round(stats.norm.cdf(a) * 2 ** 20 - 0.5).astype(np.int64)  # the quantile's index back
    bits = (j[:, None] >> np.arange(20)) & 1
    assert np.abs(bits.mean(axis=0) - 0.5).max() < 0.005


def test_the_foreground_and_the_background_are_cut_from_one_field():
    """The object's two regions are noised from one draw (as Hard ImageNet's rfs.py noises them):
    at a level and trial, the foreground copy's noise and the background copy's noise add up to
    the object field's draw, `draw_seed(.., 'object', level)`; an attribute has a draw of its own."""
    x = torch.full((2, 3, 6, 5), 0.5)
    m = (torch.rand(2, 1, 6, 5, generator=torch.Generator().manual_seed(1)) > 0.5).float()
    fed = []

    def predict(batch):
        fed.append(batch - 0.5)
        return torch.zeros(batch.shape[0], dtype=torch.long)
    regions = object_regions(m) + [Region("attr:all", torch.tensor([0, 1]), torch.ones(2, 1, 6, 5))]
    region_predictions(predict, x, regions, ["c/0", "c/1"], 5, [0.1], trials=2, kind="sigma", chunk=4)
    fg, bg, attr = (f.view(2, 2, 3, 6, 5) for f in fed)  # one level: fg, bg, then the attribute
    field = torch.from_numpy(np.stack([_oracle_draw(draw_seed(5, f"c/{k}", "object", 0.1), 2, 6, 5)
                                       for k in range(2)], 1)).permute(0, 1, 4, 2, 3) * 0.1
    assert torch.allclose(fg + bg, field, atol=1e-6)
    assert (fg * (1 - m) == 0).all() and (bg * m == 0).all()
    own = torch.from_numpy(_oracle_draw(draw_seed(5, "c/1", "attr:all", 0.1), 2, 6, 5)).permute(0, 3, 1, 2) * 0.1
    assert torch.allclose(attr[:, 1], own, atol=1e-6) and not torch.allclose(attr[:, 1], field[:, 1], atol=1e-2)


def test_noise_rows_do_not_depend_on_the_batch_size(synth_root):
    """Per-image draws: batches of 5 and of 64 give the very same per-image rows (predictions included)."""
    from bgbench.models import create_model
    model = create_model("timm:test_resnet")
    rows = [sorted(run_measure(NOISE, model, synth_root, NoiseConfig(levels=[0.3, 0.6], trials=2, batch_size=b),
                               progress=False).rows) for b in (5, 64)]
    assert rows[0] == rows[1] and len(rows[0]) == 36 * 2 * 2 * 2
    assert {r.correct for r in rows[0]} == {0, 1}  # some right, some wrong: the predictions are not all alike


@pytest.mark.parametrize("kind", ["sigma", "l2"])
def test_noise_drawn_by_threads_ahead_of_the_forward_is_the_noise_drawn_in_turn(kind):
    """The next level's draws are made by threads while this one's forwards run: every noisy copy
    the model sees is, bit for bit, the one drawn in turn (a 'model' that returns the copies' exact
    bits shows them all), whatever the number of threads, and the one drawn by torch's arithmetic
    as a card draws it (`on_device`)."""
    gen = torch.Generator().manual_seed(3)
    x, m = torch.rand(5, 3, 6, 7, generator=gen), (torch.rand(5, 1, 6, 7, generator=gen) > 0.5).float()
    regions = object_regions(m) + [Region("attr:part", torch.tensor([1, 3]), m[[1, 3]])]
    ids = [f"c/{k}" for k in range(5)]
    seen = {}
    for workers in (0, 1, 3, "device"):
        fed = []

        def predict(batch):  # records what it was fed; its 'prediction' is the copy's first bits
            fed.append(batch.clone())
            return batch.flatten(1).view(torch.int32)[:, 0].long()
        out = region_predictions(predict, x, regions, ids, 7, [0.1, 0.4, 0.9], 2, kind, chunk=4,
                                 workers=0 if workers == "device" else workers, on_device=workers == "device")
        seen[workers] = (torch.cat(fed), {k: v.clone() for k, v in out.items()})
    for workers in (1, 3, "device"):
        assert torch.equal(seen[workers][0], seen[0][0])
        assert all(torch.equal(seen[workers][1][k], seen[0][1][k]) for k in seen[0][1])
    # and each copy is the image plus its own seeded draw (the oracle: `_oracle_draw`), the
    # background's cut from the object's field
    level, k, t = 0.4, 2, 1
    draw = _oracle_draw(draw_seed(7, "c/2", "object", level), 2, 6, 7)[t]
    n = torch.from_numpy(draw).permute(2, 0, 1) * (1 - m[k])
    if kind == "l2":
        n = n * (level / n.flatten().norm())
    expected = (x[k] + (n if kind == "l2" else n * level)).clamp(0, 1)
    copies = seen[0][0].view(-1, 3, 6, 7)
    assert any(torch.allclose(c, expected, atol=1e-6) for c in copies)


def noisy_predictions(predict, x, mask, image_ids, seed, levels, trials, kind):
    """Predictions (region, level, trial, image) on noisy copies of `x`, object regions in `REGIONS`
    order: the engine's `region_predictions` on the object and background regions of `mask`."""
    out = region_predictions(predict, x, object_regions(mask), image_ids, seed, levels, trials, kind)
    return torch.stack([out[r] for r in REGIONS])


def test_a_model_that_reads_only_the_foreground_has_rfs_one():
    x = torch.full((2, 3, 8, 8), 0.5)
    m = _left_half()
    labels = torch.tensor([1, 1])

    def predict(batch):  # right iff the foreground (left half) is untouched
        return torch.where((batch[..., :4] - 0.5).abs().amax(dim=(1, 2, 3)) == 0, 1, 0)
    preds = noisy_predictions(predict, x, m, ["c/0", "c/1"], 0, [0.25, 0.5], trials=3, kind="sigma")
    ok = (preds == labels).numpy()
    assert ok.shape == (2, 2, 3, 2)
    assert not ok[0].any() and ok[1].all()  # fg noise: always wrong; bg noise: always right
    rows = [NoiseRow(f"c/{k}", 1, r, lvl, t, int(ok[ri, li, t, k])) for ri, r in enumerate(("fg", "bg"))
            for li, lvl in enumerate((0.25, 0.5)) for t in range(3) for k in range(2)]
    s = summarize(rows)
    assert {lvl: e["value"] for lvl, e in s.rfs.items()} == {0.25: 1.0, 0.5: 1.0} and s.rfs_overall == 1.0


def test_attribute_noise_goes_on_its_mask_only_and_only_on_images_that_have_it():
    x = torch.full((3, 3, 8, 8), 0.5)
    part = torch.zeros(1, 1, 8, 8)
    part[..., 6:, 6:] = 1  # image 2's attribute: the bottom-right corner
    seen = []

    def predict(batch):  # records where the noise went; right iff the top-left corner is clean
        seen.append((batch - 0.5).abs().flatten(1).gt(0))
        return torch.where((batch[..., :2, :2] - 0.5).abs().amax(dim=(1, 2, 3)) == 0, 0, 1)
    regions = [Region("attr:corner", torch.tensor([2]), part)]
    out = region_predictions(predict, x, regions, ["a", "b", "c"], 0, [0.5], trials=2, kind="sigma")
    assert out["attr:corner"].shape == (1, 2, 1) and (out["attr:corner"] == 0).all()
    touched = seen[0].view(2, 3, 8, 8)
    assert touched[..., 6:, 6:].any() and not touched[..., :6, :].any() and not touched[..., :, :6].any()


# ----------------------------------------------------------------------------------------------
# noise: accuracy per class pooled over trials, mean over classes, and RFS, by hand

# class 0 has one image (a), class 1 three (b, c, d); two trials; levels 0.5 and 1.0
_HAND = {  # (region, level): {image: trials correct}
    ("fg", 0.5): {"a": (1, 1), "b": (0, 0), "c": (1, 0), "d": (0, 0)},
    ("bg", 0.5): {"a": (1, 0), "b": (1, 1), "c": (1, 1), "d": (1, 1)},
    ("fg", 1.0): {"a": (0, 0), "b": (0, 0), "c": (0, 0), "d": (0, 0)},
    ("bg", 1.0): {"a": (1, 1), "b": (0, 0), "c": (0, 0), "d": (1, 1)},
}
_LABEL = {"a": 0, "b": 1, "c": 1, "d": 1}


def _hand_rows():
    return [NoiseRow(img, _LABEL[img], region, level, t, ok) for (region, level), per in _HAND.items()
            for img, oks in per.items() for t, ok in enumerate(oks)]


def test_noise_accuracy_is_the_mean_of_per_class_accuracies_pooled_over_trials():
    s = summarize(_hand_rows(), replicates=200)
    fg, bg = s.curves["fg"], s.curves["bg"]
    # level 0.5, fg: class 0 2/2 = 1, class 1 1/6 -> 7/12 (pooled over images it would be 3/8)
    assert fg[0]["acc"] == pytest.approx(7 / 12) and bg[0]["acc"] == pytest.approx((1 / 2 + 1) / 2)
    # level 1.0, fg: 0 everywhere; bg: class 0 2/2, class 1 2/6 -> 2/3
    assert fg[1]["acc"] == 0 and bg[1]["acc"] == pytest.approx(2 / 3)
    # RFS at 0.5: a = (7/12 + 9/12)/2 = 2/3, (9/12 - 7/12) / (2 * 1/3) = 1/4; at 1.0: (2/3) / (2 * 1/3) = 1
    assert s.rfs[0.5]["value"] == pytest.approx(0.25) and s.rfs[1.0]["value"] == pytest.approx(1.0)
    # overall, from the accuracies averaged over levels: fg 7/24, bg 17/24, a = 1/2 -> 10/24
    assert s.rfs_overall == pytest.approx(10 / 24)
    assert fg[0]["n"] == 4 and fg[0]["trials"] == 2 and s.classes == 2


def _bernoulli_rows(per_class, classes=3, trials=1, levels=(0.5,), seed=0, p_fg=0.4, p_bg=0.8):
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(classes):
        for k in range(per_class):
            for level in levels:
                for t in range(trials):
                    rows.append(NoiseRow(f"{c}/{k}", c, "fg", level, t, int(rng.random() < p_fg)))
                    rows.append(NoiseRow(f"{c}/{k}", c, "bg", level, t, int(rng.random() < p_bg)))
    return rows


def _independent_bootstrap(rows, replicates, seed):
    """A bootstrap written from the definition: resample each class's images with replacement
    (every trial and both regions of an image together), recompute the class-mean accuracy of
    each region at the single level, and its RFS; 95% percentile intervals."""
    images = {}
    for r in rows:
        d = images.setdefault(r.image_id, {"label": r.label, "fg": [], "bg": []})
        d[r.region].append(r.correct)
    by_class = {}
    for img, d in images.items():
        by_class.setdefault(d["label"], []).append(d)
    rng = np.random.default_rng(seed + 12345)
    stats = {"fg": [], "bg": [], "rfs": []}
    for _ in range(replicates):
        acc = {"fg": [], "bg": []}
        for members in by_class.values():
            draw = [members[i] for i in rng.integers(0, len(members), len(members))]
            for region in acc:
                acc[region].append(sum(sum(d[region]) for d in draw) / sum(len(d[region]) for d in draw))
        f, b = np.mean(acc["fg"]), np.mean(acc["bg"])
        a = (f + b) / 2
        stats["fg"].append(f)
        stats["bg"].append(b)
        stats["rfs"].append(0.0 if min(a, 1 - a) == 0 else (b - f) / (2 * min(a, 1 - a)))
    return {k: np.percentile(v, [2.5, 97.5]) for k, v in stats.items()}


def test_noise_bootstrap_matches_an_independent_one_and_has_width_with_one_trial():
    rows = _bernoulli_rows(per_class=30, trials=1)
    s = summarize(rows, replicates=2000, seed=3)
    want = _independent_bootstrap(rows, 2000, seed=3)
    fg, bg, rfs = s.curves["fg"][0], s.curves["bg"][0], s.rfs[0.5]
    assert (fg["lo"], fg["hi"]) == pytest.approx(tuple(want["fg"]), abs=0.025)
    assert (bg["lo"], bg["hi"]) == pytest.approx(tuple(want["bg"]), abs=0.025)
    assert (rfs["lo"], rfs["hi"]) == pytest.approx(tuple(want["rfs"]), abs=0.05)
    assert fg["hi"] - fg["lo"] > 0.05 and rfs["hi"] - rfs["lo"] > 0.05  # one trial: still an interval
    for e, value in ((fg, fg["acc"]), (bg, bg["acc"]), (rfs, rfs["value"])):
        assert e["lo"] <= value <= e["hi"]
    assert s.rfs_overall_interval[0] <= s.rfs_overall <= s.rfs_overall_interval[1]
    assert summarize(rows, replicates=2000, seed=3).curves == s.curves  # seeded: the same again


def test_noise_interval_shrinks_like_one_over_root_n():
    small = _bernoulli_rows(per_class=20, seed=1)
    big = [dataclasses.replace(r, image_id=f"{r.image_id}#{copy}") for copy in range(4) for r in small]  # 4 times
    ws = [summarize(r, replicates=2000).curves["fg"][0] for r in (small, big)]
    width = [w["hi"] - w["lo"] for w in ws]
    assert ws[0]["acc"] == pytest.approx(ws[1]["acc"])
    assert 0.35 < width[1] / width[0] < 0.65  # 4x the images: about half the width


# ----------------------------------------------------------------------------------------------
# noise: level grids

def test_noise_grids_are_rival10s_and_hard_imagenets():
    rival_sigma = [30 / 255, 60 / 255, 90 / 255, 120 / 255, 150 / 255, 180 / 255, 210 / 255]
    assert NoiseConfig().levels is None and NoiseConfig().grid == ""  # the data chooses (`data_grid`)
    assert NoiseConfig(levels="rival10").levels == pytest.approx(rival_sigma)
    l2 = NoiseConfig(kind="l2", levels="rival10")
    assert l2.grid == "rival10" and l2.levels == [25.0, 50.0, 75.0, 100.0, 125.0, 150.0, 175.0, 200.0]
    assert NoiseConfig(levels="hardimagenet").levels == [0.125, 0.25, 0.375, 0.5, 0.625, 0.75]
    assert NoiseConfig(levels=["hardimagenet"], kind="l2").levels == [30.0, 60.0, 90.0, 120.0, 150.0, 180.0]
    custom = NoiseConfig(levels=["0.5", "30/255"])
    assert custom.grid == "custom" and custom.levels == pytest.approx([0.5, 30 / 255])
    spelled = NoiseConfig(levels=[f"{k}/255" for k in range(30, 211, 30)])
    assert spelled.grid == "rival10"  # the grid's own numbers are the grid
    with pytest.raises(BgbenchError, match="--levels"):
        NoiseConfig(levels=["rival11"])
    with pytest.raises(BgbenchError, match="--levels"):
        NoiseConfig(levels=[-0.5])
    with pytest.raises(BgbenchError, match="--trials"):
        NoiseConfig(trials=0)
    with pytest.raises(BgbenchError, match="--noise"):
        NoiseConfig(kind="uniform")


def test_noise_probe_cli_stores_rows_grid_and_intervals(synth_root, tmp_path):
    db = tmp_path / "r.db"
    proc = run_cli("probe", "noise", "--model", "timm:test_resnet", "--data", synth_root, "--levels", "60/255",
                   "120/255", "--trials", "1", "--quiet", "--json", "--db", db)
    assert proc.returncode == 0, proc.stderr
    doc = _strict_json(proc.stdout)
    with Store(db) as store:
        n = store.conn.execute("SELECT COUNT(*) FROM probe_noise WHERE run_id=?", (doc["run_id"],)).fetchone()[0]
        again = NOISE.read(store, doc["run_id"]).to_dict()
        run = store.get_run(doc["run_id"])
        metrics = {(m["name"], m["variant"]): m for m in store.metrics(doc["run_id"])}
    assert run["kind"] == "probe_noise" and n == 36 * 2 * 2  # images x regions x levels x 1 trial
    config = json.loads(run["config"])
    assert config["grid"] == "custom" and config["levels"] == pytest.approx([60 / 255, 120 / 255])
    assert doc["grid"]["levels"] == pytest.approx([60 / 255, 120 / 255]) and "custom" in doc["grid"]["label"]
    assert again["rfs_overall"] == pytest.approx(doc["rfs_overall"])
    assert again["rfs_overall_lo"] == pytest.approx(doc["rfs_overall_lo"])
    overall = metrics[("rfs", "")]
    assert overall["value"] == pytest.approx(doc["rfs_overall"]) and overall["lo"] < overall["hi"]
    fg = doc["curves"]["fg"][0]
    assert fg["hi"] > fg["lo"]  # one trial, yet an interval (over images)
    with Store(db) as store:  # what the CLI prints without --json
        table = NOISE.read(store, doc["run_id"]).text()
    assert "grid custom σ 60/255 … 120/255 (2 levels)" in table and "RFS overall" in table
    assert_one_line_error(run_cli("probe", "noise", "--model", "timm:test_resnet", "--data", synth_root,
                                  "--trials", "0", "--db", db), "--trials")
    assert_one_line_error(run_cli("probe", "noise", "--model", "timm:test_resnet", "--data", synth_root,
                                  "--levels", "loud", "--db", db), "--levels", "loud")


def test_noise_levels_read_as_their_grid_writes_them():
    """RIVAL10 writes σ as k/255 (compute_noise_robustness.py: 30/255 ... 210/255); so do custom σ
    levels that are whole 255ths; other levels (HardImageNet's 0.125, L2 norms) stay numbers."""
    from bgbench.measures.noise.levels import grid_label, level_label, resolve_levels
    assert resolve_levels(["60/255", "120/255"], "sigma") == ("custom", [60 / 255, 120 / 255])
    assert resolve_levels([f"{k}/255" for k in range(30, 211, 30)], "sigma")[0] == "rival10"
    assert grid_label("custom", "sigma", [60 / 255, 120 / 255]) == "custom σ 60/255 … 120/255 (2 levels)"
    assert [level_label(v, "sigma", "hardimagenet") for v in (0.125, 0.75)] == ["0.125", "0.75"]
    assert [level_label(v, "sigma") for v in (0.25, 1.0)] == ["0.25", "1"]
    assert level_label(50.0, "l2", "rival10") == "50"


def rfs(acc_fg_noise: float, acc_bg_noise: float) -> float:
    """RIVAL10's RFS of two accuracies, through bgbench's element-wise `rfs_array` (the summary's)."""
    from bgbench.measures.noise.summary import rfs_array
    return float(rfs_array(acc_fg_noise, acc_bg_noise))


def test_rfs_edge_cases_and_sign():
    assert rfs(0.0, 0.0) == 0 and rfs(1.0, 1.0) == 0
    assert rfs(0.2, 0.8) == pytest.approx(0.6 / (2 * 0.5))  # fg noise hurts more: positive
    assert rfs(0.8, 0.2) == pytest.approx(-0.6)
    assert rfs(0.0, 0.5) == pytest.approx(0.5 / (2 * 0.25))  # a = 0.25 -> RFS 1 (extreme)
    assert rfs(0.9, 1.0) == pytest.approx(0.1 / (2 * 0.05))


@given(st.floats(0, 1), st.floats(0, 1))
def test_rfs_is_bounded_and_antisymmetric(f, b):
    assert -1 - 1e-9 <= rfs(f, b) <= 1 + 1e-9
    assert rfs(f, b) == pytest.approx(-rfs(b, f))
