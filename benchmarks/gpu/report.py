"""results.md from the results of benchmarks/gpu/run.py: what a reader of issue 37 looks at first.

A pure function of the results dictionary (so results.json can be re-rendered), and forgiving: a
stage that failed or never ran leaves a dash in its rows, never an error here.
"""
from __future__ import annotations

from typing import List, Optional

MODES = {"eager": "fp32 (eager)", "bf16": "bf16 autocast", "channels_last": "channels-last (fp32)",
         "compile": "torch.compile (fp32)", "channels_last+compile": "channels-last + compiled (fp32)",
         "bf16+channels_last+compile": "bf16 autocast + channels-last + compiled"}
DASH = "–"


def rate(x: Optional[float]) -> str:
    """Images (or pairs) per second, thousands separated."""
    if x is None:
        return DASH
    return f"{x:,.0f}/s" if x >= 100 else f"{x:,.1f}/s"


def ratio(a: Optional[float], b: Optional[float]) -> str:
    """a / b to three places, or a dash when either is missing."""
    return f"{a / b:.3f}" if a is not None and b else DASH


def _figures(results: dict, stage: str) -> dict:
    """A stage's figures, empty when it failed before writing any or never ran."""
    return (results.get("stages", {}).get(stage) or {}).get("figures") or {}


def markdown(results: dict) -> str:
    """The whole page: what ran where, the stages, the figures, the anchors, the smoke test's notes."""
    env = _figures(results, "env")
    card = env.get("card") or "unknown (the env stage did not run)"
    tiny = results.get("tiny")
    lines = ["# bgbench on a GPU (issue 37)", ""]
    if results.get("device", "").startswith("cuda"):
        lines.append(f"- card: **{card}**, {env.get('memory_gib', 0):.0f} GiB; torch {env.get('torch', '?')}, "
                     f"CUDA {env.get('cuda', '?')}, cuDNN {env.get('cudnn', '?')}; {env.get('usable_cpus', '?')} "
                     f"CPU cores ({env.get('cpu', '?')})")
    else:
        lines.append(f"- no GPU: device `{results.get('device')}`, {card}, {env.get('usable_cpus', '?')} cores; "
                     f"torch {env.get('torch', '?')}")
    if tiny:
        lines.append("- **tiny mode** (`--tiny`): toy sizes (timm's test_resnet, 32-px images, 2 a class, one torch "
                     "thread, `--compile` a no-op) that check the script runs end to end; its figures measure "
                     "nothing")
    lines += [f"- started {results.get('started', '?')}, {results.get('seconds', '?')} s in all",
              "- the models have random weights (timm's seeded init; the challenge's linear heads are fitted on "
              "their features): no weights can be downloaded offline, and speed does not depend on them", ""]
    lines += _stages(results) + [""] + _figure_table(results, card) + [""] + _anchors(results, card)
    lines += _test_details(results)
    return "\n".join(lines) + "\n"


def _stages(results: dict) -> List[str]:
    """One row a stage: its status, seconds and its note or one-line error."""
    rows = ["| stage | status | seconds | note or error |", "|---|---|---|---|"]
    for name, r in results.get("stages", {}).items():
        text = r.get("error") or r.get("note") or ""
        rows.append(f"| {name} | {r.get('status')} | {r.get('seconds', DASH)} | {text.replace('|', '/')} |")
    return rows


def _figure_table(results: dict, card: str) -> List[str]:
    """Every figure beside its own pure forward (or baseline), their ratio and issue 37's goal."""
    sizes = results.get("sizes", {})
    rows = [f"Figures on {card}: {sizes.get('size', '?')}-px JPEG (quality 75), {sizes.get('arch', '?')}; each "
            "beside its own pure forward, timed in the same run.", "",
            "| figure | bgbench | its pure forward | ratio | goal |", "|---|---|---|---|---|"]
    rows += _eval_rows([_figures(results, "eval"), _figures(results, "eval_compiled")], _figures(results, "env"))
    rows += _challenge_rows(_figures(results, "challenge"))
    rows += _capacity_rows(_figures(results, "capacity"))
    d = _figures(results, "dfr")
    if d:
        rows.append(f"| DFR feature extraction ({d['images']} images, batch {d['batch_size']}) | "
                    f"{rate(d.get('extraction'))} | {rate(d.get('forward'))} | "
                    f"{ratio(d.get('extraction'), d.get('forward'))} | near 1 |")
    p = _figures(results, "probes")
    for name, what in (("noise", "noisy images"), ("saliency", "images, Grad-CAM (baseline: forward + backward)"),
                       ("features", "images"), ("ablate", "clean or grayed images")):
        if name in p:
            rows.append(f"| {name} probe, {what} ({p['images']} images, batch {p['batch_size']}) | "
                        f"{rate(p[name]['probe'])} | {rate(p[name]['baseline'])} | {p[name]['ratio']:.3f} | "
                        f">= {p.get('target', 0.9)} |")
            if "per_image_ratio" in p[name]:
                rows.append(f"| {name} probe per image, its run's fixed {p[name]['fixed_seconds']:.2f} s aside (timed "
                            f"again on half the images) | {DASH} | {DASH} | {p[name]['per_image_ratio']:.3f} | {DASH} |")
    return rows


def _capacity_rows(c: dict) -> List[str]:
    """capacity.py's figures: bgbench's own host work per image with a null model, on this machine's CPU."""
    if not c:
        return []
    rows = [f"| feed from the pixel cache (host side of the GPU path, null model), one core | "
            f"{rate(c.get('feed_cached'))} | {DASH} | {DASH} | >= 20,000/s |",
            f"| probe batches (images + masks) from the pixel cache, one core | {rate(c.get('probe_batches_cpu'))} | "
            f"{DASH} | {DASH} | {DASH} |"]
    first = c.get("eval_first_pass_host")
    if first:
        rows.append(f"| eval's first pass over every variant from an empty cache, host work alone (meta device, "
                    f"{first['images']:,} images, every core) | {rate(first['host_images_s'])} | {DASH} | {DASH} | "
                    f">= 0.8 of the forward (the first-pass eval goal) |")
    for key, how in (("eval_first_pass_card", "the next variant decoded ahead"),
                     ("eval_first_pass_card_in_turn", "variants decoded in turn")):
        card = c.get(key)
        if card:
            rows.append(f"| eval's first pass against a simulated card of {rate(card['card_rate'])} (host work on "
                        f"the meta device, {how}) | {rate(card['wall_images_s'])} | {rate(card['card_rate'])} | "
                        f"{card['card_ratio']:.3f} | >= 0.8 |")
    passes = c.get("first_pass_by_processes") or {}
    if passes:
        listed = ", ".join(f"{p}: {rate(r)}" for p, r in passes.items())
        rows.append(f"| first pass into the pixel cache, by decoding processes ({listed}) | {rate(max(passes.values()))}"
                    f" | {DASH} | {DASH} | 1 -> 2 processes {c.get('first_pass_scaling', 0):.2f}x"
                    + (f" (paired {c['first_pass_scaling_paired']:.2f}x)" if "first_pass_scaling_paired" in c else "")
                    + " (>= 1.8x) |")
    for r in (c.get("challenge") or {}).get("rows") or []:
        rows.append(f"| challenge search with a null model, {r['case']}, {r['precision']}, one core ({r['fg']} x "
                    f"{r['bg']} pairs, {r['pairs']:,} evaluated) | {rate(r['host_pairs_s'])} pairs | {DASH} | {DASH} | "
                    f">= 20,000/s |")
    return rows


def _eval_rows(stages: List[dict], env: dict) -> List[str]:
    """The eval path against its pure forward, per forward mode; per decoding-thread count on the
    last mode of each stage; and the decode rate with the cores it takes to feed the fastest forward."""
    rows = []
    for e in (e for e in stages if e):
        workers = f"default decoding threads ({e.get('default_workers')} of {env.get('usable_cpus', '?')} cores)"
        for m in e.get("modes", []):
            rows.append(f"| eval path from the pixel cache, {MODES.get(m['mode'], m['mode'])}, {e['images']} images, "
                        f"batch {e['batch_size']}, {workers} | {rate(m['eval'])} | {rate(m['forward'])} | "
                        f"{ratio(m['eval'], m['forward'])} | >= 0.9 |")
            if m.get("eval_first_pass"):
                rows.append(f"| eval path, first pass (decoding into an empty cache), {MODES.get(m['mode'], m['mode'])}"
                            f" | {rate(m['eval_first_pass'])} | {rate(m['forward'])} | "
                            f"{ratio(m['eval_first_pass'], m['forward'])} | >= 0.8 |")
        rows += _grid_row(e.get("workers_grid"))
        if e.get("feed_alone"):
            rows.append(f"| the feed alone (pixel cache -> batches -> device, [0,1] float there; no model), "
                        f"{e['images']} images, batch {e['batch_size']} | {rate(e['feed_alone'])} | {DASH} | {DASH} | "
                        f"above the fastest forward |")
    modes = [m for e in stages if e for m in e.get("modes", [])]
    decode = next((e["decode_per_core"] for e in stages if e.get("decode_per_core")), None)
    if decode:
        fastest = max((m["forward"] for m in modes), default=None)
        cores = f"{fastest / decode:.1f} cores feed the fastest forward" if fastest else ""
        rows.append(f"| decode + preprocess (PIL JPEG decode, [0,1] tensor), one core | {rate(decode)} | {DASH} | "
                    f"{DASH} | {cores} |")
    return rows


def _grid_row(grid: Optional[dict]) -> List[str]:
    """The eval path with the best number of decoding threads, and every count tried."""
    rows = []
    if grid:
        rates = {str(w): r for w, r in grid["eval"].items()}  # JSON keys are strings
        best = rates.get(str(grid["best"]))
        listed = ", ".join(f"{w}: {rate(r)}" for w, r in rates.items())
        rows.append(f"| eval path, {MODES.get(grid['mode'], grid['mode'])}, best decoding threads: {grid['best']} "
                    f"(of {listed}) | {rate(best)} | {rate(grid['forward'])} | {ratio(best, grid['forward'])} | "
                    ">= 0.9 |")
    return rows


def _challenge_rows(c: dict) -> List[str]:
    """Pairs/s against forwards/s per model and precision, bf16-verified's time against fp32's, and
    the full challenge's projected hours."""
    rows, fp32 = [], {}
    for r in c.get("rows", []):
        rows.append(f"| challenge, {r['model']}, {r['precision']}: {r['n']} sampled foregrounds x "
                    f"{r.get('num_bg', '?')} backgrounds, {r['fooled']} fooled, {r['pairs']} pairs | "
                    f"{rate(r['pairs_s'][0])} pairs | "
                    f"{rate(r['pure'][0])} | {ratio(r['pairs_s'][0], r['pure'][0])} | >= 0.9 on a robust model |")
        if r["precision"] == "fp32":
            fp32[r["model"]] = r
        elif r["precision"] == "bf16-verified" and r["model"] in fp32:
            a, b = r["total"][0], fp32[r["model"]]["total"][0]
            rows.append(f"| challenge, {r['model']}: bf16-verified against fp32, wall (verdicts equal: "
                        f"{'yes' if r.get('same_verdicts_as_fp32') else 'NO'}; {r.get('rechecked')} of "
                        f"{r.get('composites')} composites rechecked in fp32; ratio: fp32's time / this) | "
                        f"{a:.2f} s | fp32 {b:.2f} s | {b / a:.2f}x | faster, verdicts equal |")
    for r in c.get("rows", [])[:2]:
        rows.append(f"| full 4,050 x 4,050 challenge projected at the pure forward rate ({r['precision']}: every "
                    f"pair, as for a robust model) | {r['full_challenge_hours']:.2f} h | {rate(r['pure'][0])} | "
                    f"{DASH} | (projection) |")
    return rows


def _anchors(results: dict, card: str) -> List[str]:
    """timm's published ResNet-50 rates, with this card's bf16 pure forwards below them."""
    e = {m["mode"]: m for stage in ("eval", "eval_compiled") for m in _figures(results, stage).get("modes", [])}
    rows = ["Anchors: timm's published ResNet-50 at 224 px with AMP (huggingface/pytorch-image-models "
            "`results/benchmark-infer-amp-nchw-*.csv`), images/s of a pure forward:", "",
            "| card | eager | compiled | source |", "|---|---|---|---|"]
    for a in results.get("anchors", []):
        rows.append(f"| {a['card']} (timm) | {a['eager']:,} | {a['compiled']:,} | {a['source']} |")
    eager, compiled = e.get("bf16", {}).get("forward"), e.get("bf16+channels_last+compile", {}).get("forward")
    sizes = results.get("sizes", {})
    what = ("tiny CPU mode: not comparable" if results.get("tiny") else
            f"bgbench's pure forward, {sizes.get('arch')}, bf16 autocast, batch {sizes.get('batch')}; compiled: "
            "with channels-last")
    rows.append(f"| **{card}** (this run) | {rate(eager)} | {rate(compiled)} | {what} |")
    return rows


def _test_details(results: dict) -> List[str]:
    """The smoke test's failures with their messages, and the facts its tests recorded."""
    t = _figures(results, "gpu_tests").get("tests", [])
    notes = [f"- `{x['test']}`: {x['outcome']}" + (f": {x['message']}" if x["message"] and x["outcome"] != "skipped"
                                                   else "") for x in t if x["outcome"] in ("failed", "error")]
    notes += [f"- `{x['test']}`: {k} = {v}" for x in t for k, v in x["properties"].items()]
    return ["", "CUDA smoke test (`pytest -m gpu tests/gpu`):", ""] + notes if notes else []
