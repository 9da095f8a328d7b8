"""bgbench's own work per image, measured with a model that costs nothing: the CPU proxy of GPU speed.

On a GPU the forward of a ResNet-50 takes 1/7,000 to 1/23,000 of a second per image (H100, fp32
eager to bf16 + channels-last + compiled); whatever bgbench does on the host per image must take
less, or the card waits. With a model that returns its logits at once, what remains to time is
exactly that host work, and it can be measured and improved on any laptop. Each figure is images
(or pairs) per second on one core, against the goal that keeps the fastest H100 forward fed
(20,441 img/s, `benchmarks/gpu/results/`):

- feed from the cache: the host side of the GPU path (`evaluation.feed.host_runs` from the
  pixel cache's map, then the copy into a (pinned, on a GPU) staging buffer), in batches of 256;
- the whole eval path on the CPU (`predict_items`: feed, [0,1] conversion on the CPU, decision,
  bookkeeping) with the null model; on a GPU the conversion runs on the card, so this is a bound;
- the probes' batches (images and masks, the feed's `Images.of_pairs`) from the cache;
- the first pass (`data.pixel_cache.pixels_of` into a fresh cache: header reads, decoding in 1 and 2
  processes, the map written): images/s, the best of --repeats, and the scaling from 1 to 2
  processes (goal 1.8x), beside two ceilings: a toy CPU task's scaling and PIL's decoding of the
  same files alone in 1 and 2 forked processes;
- the challenge's search (`benchmarks/capacity_challenge.py`): the pairs/s it schedules on one core,
  robust (every pair needed) and fooled, fp32 and bf16-verified (goal 20,000);
- the noise probe's draws on the host (`measures.noise.engine.stacked_draws`, the CPU's path: a
  card draws its own, `engine.device_draws`, the same values): the forwards/s that numpy's draws
  can feed, drawn in turn and by 1 and 2 threads;
- each probe whole (`capacity_probes.py`): its host work alone, the probe run on torch's meta
  device (`host_only.py`), projected to IN-9's 4,050 foregrounds, against the fastest forward's
  rate divided by the probe's forwards per image (`--no-probes` leaves it out).

The images are the real-size set of `realsize_data.py` (224-px JPEG quality 75, IN-9's layout).

    PYTHONPATH=src:benchmarks python benchmarks/capacity.py [--per-class 50] [--batch-size 256] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from bgbench.runs import run_measure

#: The fastest ResNet-50 forward measured on an H100 (bf16 + channels-last + compiled, batch 240).
H100_FASTEST = 20441.0
GOALS = {"feed_cached": 20000.0, "first_pass_scaling": 1.8, "challenge_pairs": 20000.0}


class NullNet(torch.nn.Module):
    """Logits at no cost: zeros of the right shape (every image 'predicted' class 0)."""

    def __init__(self, classes: int = 9):
        super().__init__()
        self.classes = classes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.new_zeros((x.shape[0], self.classes))


def null_model(classes: int = 9):
    from bgbench.models.spec import BgModel, ModelSpec
    return BgModel(NullNet(classes), ModelSpec(name="null", arch="null", num_classes=classes)).eval()


def best_rate(fn, n: int, repeats: int) -> float:
    """n / the best of `repeats` timed calls of fn (after one warm-up)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return n / best


def feed_rate(items, batch_size: int, repeats: int) -> dict:
    """The host side of the GPU path, from the cache: assemble each batch, copy it into a staging
    buffer (pinned on a GPU; plain here, where there is none to pin)."""
    from bgbench.data.pixel_cache import pixels_of
    from bgbench.evaluation.feed import Images, host_runs
    pixels = pixels_of(items)
    assert pixels.from_cache == len(items)
    staging = torch.empty((batch_size, *pixels.shape(0)), dtype=torch.uint8)
    images = Images.of(pixels, batch_size)

    def go():
        for _, run in host_runs(images, range(len(images)), workers=1):
            staging[:len(run.x)] = run.x
    return {"feed_cached": best_rate(go, len(items), repeats)}


def eval_path_rate(items, batch_size: int, repeats: int) -> dict:
    from bgbench.evaluation.predict import predict_items
    model = null_model()
    return {"eval_path_cpu": best_rate(lambda: predict_items(model, items, batch_size=batch_size, progress=False,
                                                              workers=1), len(items), repeats)}


class SimulatedCard(torch.nn.Module):
    """A card's forward as the host sees it, at `rate` images/s: a batch is queued behind the ones
    before it and the host goes on, unless `depth` batches are already queued (eval's feed holds
    three in its pinned ring); then it waits, asleep, its cores free, as for a card. `sync` waits for
    every queued batch (a read back to the host: `CardHost` calls it on each). `rate` None: no card
    at all (the host's work alone)."""

    def __init__(self, rate: Optional[float], classes: int = 9, depth: int = 3):
        super().__init__()
        self.rate, self.classes, self.depth = rate, classes, depth
        self.queued: list = []  # when each queued batch is done, in order

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.rate:
            now = time.perf_counter()
            self.queued.append(max(now, self.queued[-1] if self.queued else now) + x.shape[0] / self.rate)
            while len(self.queued) > self.depth:
                time.sleep(max(0.0, self.queued.pop(0) - time.perf_counter()))
        return x.new_zeros((x.shape[0], self.classes))

    def sync(self) -> None:
        if self.queued:
            time.sleep(max(0.0, self.queued[-1] - time.perf_counter()))
            self.queued.clear()


def _card_host(card: SimulatedCard):
    """`host_only.HostOnly` whose every read back to the host waits for the simulated card."""
    from host_only import HostOnly

    class CardHost(HostOnly):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            waits = self.waits
            out = super().__torch_function__(func, types, args, kwargs)
            if self.waits != waits:
                card.sync()
            return out
    return CardHost()


def eval_first_pass_rate(root: Path, repeats: int, card_rate: float = 1000.0) -> dict:
    """Eval over every variant present from an empty cache, as `bgbench eval` runs it (a first pass
    a variant, the next variant decoded ahead), its network on the meta device (`host_only.py`: an
    operation costs its dispatch, as a launch costs a card's host), two ways: with no network at
    all (images/s the host hands over: the most a card's first-pass eval can get), and against a
    `SimulatedCard` of `card_rate` images/s, below what this machine decodes as an H100's strict
    fp32 forward (2,728/s) is below what its 16 cores decode (the share of that rate eval gets: what
    the card waits for, at the start of each variant above all), with the next variant decoded
    ahead and without. Best of
    `repeats`, each into a fresh cache."""
    from host_only import host_only_run
    from realsize_data import fresh_pixel_cache

    import bgbench.measures.eval.runner as runner
    from bgbench.measures import registry as catalog
    from bgbench.measures.eval.config import EvalConfig
    from bgbench.measures.registry import get_measure
    from bgbench.models.spec import BgModel, ModelSpec
    catalog.load_all()
    measure = get_measure("eval")

    def timed(rate, ahead: bool) -> dict:
        card = SimulatedCard(rate)
        model = BgModel(card, ModelSpec(name="card", arch="null", num_classes=9)).eval().to("meta")
        plan, best = runner.decode_ahead, None
        try:
            if not ahead:
                runner.decode_ahead = lambda lists, device: None
            for _ in range(repeats):
                with fresh_pixel_cache():
                    cfg = EvalConfig()
                    cfg.device = "meta"  # after the config's checks, which know real devices only
                    images = {}

                    def run():
                        result = run_measure(measure, model, str(root), cfg, progress=False)
                        images["n"] = sum(len(p.image_ids) for p in result.predictions.values())
                        card.sync()  # the run ends when the card does
                    host = host_only_run(run, 1, 1, host=_card_host(card))
                    figure = {"images": images["n"], "waits": host["waits"],
                              "wall_images_s": images["n"] * host["wall_images_s"],
                              "host_images_s": images["n"] / host["own_seconds"]}
                    if best is None or figure["wall_images_s"] > best["wall_images_s"]:
                        best = figure
        finally:
            runner.decode_ahead = plan
        if rate:
            best["card_rate"], best["card_ratio"] = rate, best["wall_images_s"] / rate
        return best

    return {"eval_first_pass_host": timed(None, True), "eval_first_pass_card": timed(card_rate, True),
            "eval_first_pass_card_in_turn": timed(card_rate, False)}


def probe_batches_rate(layout, batch_size: int, repeats: int) -> dict:
    """The host side of the probes' batches on a GPU: images and masks from the cache, stacked into
    the (pinned, there) buffers that are copied to the device; the [0,1] conversion runs there."""
    from bgbench.evaluation.feed import Images, host_runs
    pairs = layout.foregrounds()

    def go():
        images = Images.of_pairs(pairs, batch_size)
        for _ in host_runs(images, range(len(images)), workers=1):
            pass
    return {"probe_batches_cpu": best_rate(go, len(pairs), repeats)}


def noise_draws_rate(size: int, repeats: int, threads=(0, 1, 2), images: int = 64, trials: int = 3,
                     levels: int = 7) -> dict:
    """The noise probe's draws on the CPU (a card makes its own): each image's seeded draws (numpy,
    float32), one field for both object regions (fg, bg) at each level of RIVAL10's grid, `trials`
    each: `engine.stacked_draws` in the caller (0) or in 1, 2 ... threads. One draw feeds two
    forwards (its foreground and its background copy): forwards/s = images/s x 2 x levels x trials."""
    from bgbench.measures.noise.engine import draw_pool, stacked_draws
    seeds = [[(k * 1009 + step) for k in range(images)] for step in range(levels)]
    out = {}
    for t in threads:
        pool = draw_pool(t)

        def go():
            for step in seeds:
                stacked_draws(step, trials, size, size, pool)()
        rate = best_rate(go, images, repeats)
        out[t] = {"images_s": rate, "forwards_s": rate * 2 * levels * trials}
    return {"noise_draws": out}


def _threads_label(threads: int) -> str:
    return "in turn" if threads == 0 else f"{threads} thread" + ("s" if threads > 1 else "")


def first_pass(items, processes: int) -> float:
    """Images/s of a first pass into a fresh cache with `processes` decoding processes."""
    from realsize_data import fresh_pixel_cache

    from bgbench.data.pixel_cache import pixels_of
    with fresh_pixel_cache():
        t = time.perf_counter()
        pixels = pixels_of(items, processes=processes, wait=True)
        rate = len(items) / (time.perf_counter() - t)
        assert pixels.mapped
    return rate


def first_pass_figures(items, counts, repeats: int) -> dict:
    """The first pass at each process count in `counts`, `repeats` times, the counts interleaved and
    each pass into a fresh cache.

    The pool of decoding processes is kept between passes (as between a run's variants), so the
    first pass of each count starts its processes and the later ones do not: `..._cold` is that
    first, the others are best of the later ones. The scaling is given two ways: best against best,
    and the median of each repeat's own 2-process / 1-process ratio (the two timed a second apart,
    so a change in the machine's speed between repeats cancels)."""
    from bgbench.data import pixel_cache
    pixel_cache._POOLS.close()  # no pool left by an earlier figure: the first pass of each count starts one
    runs = {p: [] for p in counts}
    for _ in range(max(2, repeats)):
        for p in counts:
            runs[p].append(first_pass(items, p))
    best = {p: max(r[1:]) for p, r in runs.items()}
    return {"first_pass_1_process": best[1], "first_pass_2_processes": best[2],
            "first_pass_scaling": best[2] / best[1], "first_pass_scaling_paired": _paired(runs[1][1:], runs[2][1:]),
            "first_pass_cold": {p: r[0] for p, r in runs.items()},
            "first_pass_by_processes": best, "first_pass_runs": runs}


def _paired(ones, twos) -> float:
    """The median (the upper one of an even count) of each repeat's own 2-process / 1-process ratio."""
    ratios = sorted(b / a for a, b in zip(ones, twos))
    return ratios[len(ratios) // 2]


def _pass_label(processes: int, cold: bool) -> str:
    if processes == 1:
        return f"first pass, 1 process (decoding in a thread of the caller){', first' if cold else ''}"
    return f"first pass, {processes} processes, {'started for it' if cold else 'kept from the last pass'}"


def _pil_decode(paths) -> int:
    """Worker: decode each file with PIL alone, as `data.images.decode_image` does, keeping nothing."""
    from PIL import Image
    for path in paths:
        with Image.open(path) as im:
            im.load()
            np.asarray(im.convert("RGB"))
    return len(paths)


def decode_ceiling(items, repeats: int) -> dict:
    """PIL's decoding of the same files alone in 1 and in 2 forked processes, started first, the
    counts interleaved (best of `repeats`, and the median of each repeat's own ratio): the scaling
    this machine gives the first pass's own work right now. A toy CPU task's scaling
    (`machine_ceiling`) can be higher: on a virtual machine two cores may share one's vector units."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    chunks = [[str(it.path) for it in items[i:i + 64]] for i in range(0, len(items), 64)]
    pools = {p: ProcessPoolExecutor(p, mp_context=multiprocessing.get_context("fork")) for p in (1, 2)}
    try:
        for p, pool in pools.items():
            list(pool.map(_pil_decode, chunks[:p]))  # started
        runs = {1: [], 2: []}
        for _ in range(repeats):
            for p, pool in pools.items():
                t = time.perf_counter()
                list(pool.map(_pil_decode, chunks))
                runs[p].append(len(items) / (time.perf_counter() - t))
    finally:
        for pool in pools.values():
            pool.shutdown()
    return {"pil_1_process": max(runs[1]), "pil_2_processes": max(runs[2]),
            "pil_scaling": max(runs[2]) / max(runs[1]), "pil_scaling_paired": _paired(runs[1], runs[2])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-class", type=int, default=50, help="images per class of the real-size set (default 50)")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--size", type=int, default=224, help="image size of the real-size set (default 224)")
    ap.add_argument("--processes", type=int, nargs="+", default=[1, 2],
                    help="first pass: the numbers of decoding processes to time (default 1 2; the scaling "
                         "figure is 2 against 1)")
    ap.add_argument("--pass-repeats", type=int, default=5,
                    help="first passes timed at each process count, interleaved (default 5: this figure is the "
                         "noisiest, a shared machine's cores run at changing speeds from one second to the next)")
    ap.add_argument("--variants", nargs="+", default=["original", "mixed_rand", "only_bg_t", "mixed_same"],
                    help="the variants whose images are fed (default: four, 1,800 images at 50 a class)")
    ap.add_argument("--challenge-fg", type=int, default=256,
                    help="foregrounds of the challenge's search figure (against 4,050 backgrounds; default 256)")
    ap.add_argument("--card-rate", type=float, default=1000.0,
                    help="images/s of the simulated card that eval's first pass is timed against (default 1,000: "
                         "below what 2 cores decode, as an H100's strict fp32 2,728/s is below what 16 decode)")
    ap.add_argument("--no-probes", action="store_true", help="leave out each probe's host work (capacity_probes.py)")
    ap.add_argument("--json", type=Path, help="write the figures here too")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)  # one core: the figure is per core
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from realsize_data import realsize_dataset
    from bgbench.data.in9 import discover
    from bgbench.data.pixel_cache import pixels_of

    root = realsize_dataset(per_class=args.per_class, size=args.size)
    layout = discover(root, variants=list(args.variants))
    items = [it for v in args.variants for it in layout.items(v)]
    figures = {"images": len(items), "size": "224-px JPEG q75", "cores": os.cpu_count(),
               "torch_threads": torch.get_num_threads()}
    from build_speed import machine_ceiling
    figures["machine_ceiling"] = machine_ceiling()  # what a second process can get right now
    figures.update(decode_ceiling(items, args.pass_repeats))  # what a second process gives PIL's decoding
    figures.update(first_pass_figures(items, sorted(set(args.processes) | {1, 2}), args.pass_repeats))
    passes = figures["first_pass_by_processes"]
    with tempfile.TemporaryDirectory() as cache:
        os.environ["BGBENCH_CACHE"] = cache
        for v in args.variants:
            pixels_of(layout.items(v), wait=True)
        pixels_of(items, wait=True)
        pixels_of([it for it, _ in layout.foregrounds()], wait=True)
        figures.update(feed_rate(items, args.batch_size, args.repeats))
        figures.update(eval_path_rate(items, args.batch_size, args.repeats))
        figures.update(probe_batches_rate(layout, args.batch_size, args.repeats))
    figures.update(eval_first_pass_rate(root, args.repeats, args.card_rate))
    if not args.no_probes:  # before the draws' figure, whose threads the noise probe would draw in
        from capacity_probes import probe_capacity
        before = os.environ["BGBENCH_CACHE"]
        with tempfile.TemporaryDirectory() as work:
            os.environ["BGBENCH_CACHE"] = str(Path(work) / "cache")
            figures["probes"] = probe_capacity(root, args.repeats, work=Path(work))
        os.environ["BGBENCH_CACHE"] = before
    figures.update(noise_draws_rate(args.size, args.repeats))
    from capacity_challenge import challenge_capacity
    figures["challenge"] = challenge_capacity(num_fg=args.challenge_fg)
    rows = [("feed from the cache (host side of the GPU path), one core", figures["feed_cached"], "img/s",
             GOALS["feed_cached"]),
            ("eval path on the CPU, null model (conversion on the CPU too), one core", figures["eval_path_cpu"],
             "img/s", None),
            (f"eval's first pass, every variant ({figures['eval_first_pass_host']['images']:,} images) from an empty "
             f"cache, host work alone (meta device), {os.cpu_count()} cores", figures["eval_first_pass_host"]["host_images_s"],
             "img/s", None),
            *((f"eval's first pass against a simulated {figures[k]['card_rate']:,.0f} img/s card, {how}: share of "
               f"its rate", figures[k]["card_ratio"], "x", 0.8)
              for k, how in (("eval_first_pass_card", "next variant decoded ahead"),
                             ("eval_first_pass_card_in_turn", "variants decoded in turn"))),
            ("probe batches (images + masks) from the cache, host side, one core", figures["probe_batches_cpu"],
             "img/s", GOALS["feed_cached"]),
            *((_pass_label(p, cold=True), figures["first_pass_cold"][p], "img/s", None) for p in passes),
            *((_pass_label(p, cold=False), r, "img/s", None) for p, r in passes.items()),
            *((f"challenge search, {r['case']} model, {r['precision']}, null model ({r['fg']} x {r['bg']} pairs)",
               r["host_pairs_s"], "pairs/s", GOALS["challenge_pairs"]) for r in figures["challenge"]["rows"]),
            *((f"noise probe's draws on the CPU, {_threads_label(t)} (forwards they feed)", r["forwards_s"], "fwd/s",
               None) for t, r in figures["noise_draws"].items()),
            *((f"probe {name}, host work alone (meta device), at IN-9's 4,050 foregrounds", f["host"]["in9_images_s"],
               "img/s", f["goal_images_s"]) for name, f in figures.get("probes", {}).items()),
            ("PIL's decoding alone, 1 -> 2 forked processes (best against best)", figures["pil_scaling"], "x", None),
            ("PIL's decoding alone, 1 -> 2 forked processes (median of paired repeats)",
             figures["pil_scaling_paired"], "x", None),
            ("first pass scaling, 1 -> 2 processes (best against best)", figures["first_pass_scaling"], "x",
             GOALS["first_pass_scaling"]),
            ("first pass scaling, 1 -> 2 processes (median of paired repeats)", figures["first_pass_scaling_paired"],
             "x", GOALS["first_pass_scaling"])]
    print(f"capacity on {figures['cores']} cores, {len(items):,} images ({figures['size']}), batch {args.batch_size}:")
    for what, value, unit, goal in rows:
        verdict = "" if goal is None else ("  goal %s: %s" % (f"{goal:,.1f}" if unit == "x" else f"{goal:,.0f}",
                                                              "met" if value >= goal else "NOT met"))
        shown = f"{value:,.2f}" if unit == "x" else f"{value:,.0f}"
        print(f"  {what:<72} {shown:>10} {unit}{verdict}")
    print(f"  (the fastest H100 ResNet-50 forward measured: {H100_FASTEST:,.0f} img/s; a toy CPU task's 1 -> 2 "
          f"process scaling right now, the machine's ceiling: {figures['machine_ceiling']:.2f}x)")
    if args.json:
        args.json.write_text(json.dumps({**figures, "first_pass_by_processes": {str(k): v for k, v in passes.items()}},
                                        indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
