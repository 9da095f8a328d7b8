"""Running the Backgrounds Challenge: data loading, resumable progress, torchrun sharding, results.

I/O lives here; the verdict logic is `challenge.ChallengeEngine`, the visiting order and stopping
rule `sample`. Foregrounds are visited in the run's seeded order, in chunks; under
`torchrun` each chunk is sharded across ranks (position % world_size == rank), every rank writes
its own progress rows to the store, and rank 0 merges them once all ranks are done.

Sampled runs (`sample`, `halfwidth`): the run's identity holds the seed but not the sample size,
so rerunning with a larger `sample`, or with neither option, continues the same run and reuses
every stored verdict. A run that stops before the last foreground is finished with status
'sampled' (an estimate; resumable, and not ranked by the leaderboard, which reads 'done' runs).

Verdict rows are committed as they come (that is what makes a killed run resumable); the
summary (accuracy, per-class rates, ASR) is computed by `summarize`, which writes nothing, and
recorded by `runs.record(report, store)`, which finishes the open run.
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import torch
import torch.distributed as dist

from ... import console, protocols, runs
from ...data.images import decode_image, load_mask
from ...data.layout import Layout, discover
from ...errors import DataError
from ...models.spec import BgModel, check_compatible
from ...store import Store
from .engine import (ChallengeEngine, FgResult, attack_success_rates, class_fool_rates, top_backgrounds,
                        verdicts_from_matrix)
from .config import ChallengeConfig
from .sample import SamplePlan, done_prefix, wilson_halfwidth
from ..metrics import Estimate, accuracy, percent


@dataclass
class ChallengeReport:
    model: str
    data: str
    run_id: int
    challenge_accuracy: Estimate
    clean_accuracy: Estimate
    fooled: int
    total: int
    per_class: List[dict]
    pairs: int = 0
    seconds: float = 0.0
    full: Optional[dict] = None
    files: Dict[str, str] = field(default_factory=dict)
    estimate: bool = False  # True when only a sample of the foregrounds was evaluated
    sample: Optional[dict] = None  # seed, n, population, requested, halfwidth_target, halfwidth
    precision: Optional[dict] = None  # bf16-verified: VerifiedStats.as_dict()
    asr_rows: List[tuple] = field(default_factory=list, repr=False)
    provenance: Any = None  # runs.Provenance of the open run
    store_path: Optional[str] = None  # the store holding the verdict rows, where `record` finishes the run

    @property
    def run_status(self) -> str:
        """'sampled' for an estimate (the run can be extended), else 'done'."""
        return "sampled" if self.estimate else "done"
    model_label: Optional[str] = None  # runs.model_label: the model with its weights, for display

    def metric_rows(self) -> List[tuple]:
        c, k = self.challenge_accuracy, self.clean_accuracy
        rows = [("challenge_accuracy", "", c.value, c.lo, c.hi, c.n),
                ("clean_accuracy", "", k.value, k.lo, k.hi, k.n),
                ("fooled", "", float(self.fooled), None, None, self.total),
                ("challenge_pairs", "", self.pairs, None, None, None)]
        for row in self.per_class:
            rows.append(("challenge_accuracy_class", row["class"], row["challenge"], None, None, row["n"]))
            if "class_fool_rate" in row:
                rows.append(("class_fool_rate", row["class"], row["class_fool_rate"], None, None, None))
        if self.sample is not None:
            rows.append(("challenge_sample_n", "", self.sample["n"], None, None, self.sample["population"]))
        if self.precision is not None:  # what a bf16-verified run must keep (this invocation's counts)
            v = self.precision
            rows += [("bf16_rechecked", "", v["rechecked"], None, None, v["composites"]),
                     ("bf16_delta", "", v["delta"], None, None, None),
                     ("bf16_safety", "", v["safety"], None, None, None),
                     ("bf16_max_spread", "", v["max_spread"], None, None, v["calibration"] + v["audited"]),
                     ("bf16_exceeded", "", float(v["exceeded"]), None, None, None)]
        return rows

    def table_rows(self) -> Dict[str, List[tuple]]:
        return {"challenge_bg": self.asr_rows}

    def outputs(self) -> dict:
        return {"files": self.files, "seconds": self.seconds, "estimate": self.estimate, "sample": self.sample,
                **({"matrix": self.full["matrix"]} if self.full else {})}

    def to_dict(self) -> dict:
        return {"model": self.model, "model_label": self.model_label or self.model, "data": self.data,
                "run_id": self.run_id, "challenge_accuracy": self.challenge_accuracy.as_dict(), "clean_accuracy": self.clean_accuracy.as_dict(),
                "fooled": self.fooled, "total": self.total, "per_class": self.per_class, "pairs": self.pairs,
                "seconds": self.seconds, "full": self.full, "files": self.files, "estimate": self.estimate,
                "sample": self.sample, "precision": self.precision}

    def table(self) -> str:
        c, k = self.challenge_accuracy, self.clean_accuracy
        lines = [f"model: {self.model_label or self.model}", f"data:  {self.data}",
                 f"challenge accuracy {100 * c.value:5.1f}%  [{100 * c.lo:.1f}%, {100 * c.hi:.1f}%]  "
                 f"({self.total - self.fooled}/{self.total} foregrounds never fooled)",
                 f"clean accuracy     {100 * k.value:5.1f}%  [{100 * k.lo:.1f}%, {100 * k.hi:.1f}%]  (original)",
                 f"fooled foregrounds {self.fooled}/{self.total}",
                 *self._sample_lines(), *self._precision_lines(),
                 "", f"{'class':<24} {'n':>5} {'clean':>7} {'challenge':>10}" +
                 (f" {'fool rate':>10}" if self.full else "")]
        for row in self.per_class:
            line = f"{row['class']:<24} {row['n']:>5} {percent(row['clean'], 6)} {percent(row['challenge'], 9)}"
            if self.full:
                line += f" {percent(row['class_fool_rate'], 9)}"
            lines.append(line)
        if self.files:
            lines.append("")
            lines.extend(f"{k}: {v}" for k, v in self.files.items())
        return "\n".join(lines)

    def _sample_lines(self) -> List[str]:
        if not self.estimate or not self.sample:
            return []
        s = self.sample
        return [f"ESTIMATE from a seeded sample of {s['n']} of {s['population']} foregrounds (seed {s['seed']}, "
                f"stratified by class): 95% Wilson interval half-width {100 * s['halfwidth']:.1f} points; "
                f"each verdict is exact. Rerun with --seed {s['seed']} and without --sample to extend it to the "
                "full set."]

    def _precision_lines(self) -> List[str]:
        if not self.precision:
            return []
        p = self.precision
        line = (f"bf16-verified: {p['rechecked']} of {p['composites']} composites rechecked in fp32 "
                f"(margin <= delta {p['delta']:.3g} = safety {p['safety']:g} x measured deviation spread "
                f"{p['calibration_deviation']:.3g}; {p['calibration'] + p['audited']} run in both precisions, "
                f"largest spread {p['max_spread']:.3g})")
        if p["exceeded"]:
            line += "; WARNING: an audit exceeded the calibrated bound, verdicts are not proven equal to fp32"
        return [line]


def decode_workers() -> int:
    """Threads for decoding (PIL releases the GIL while it decodes): one per core, 2 to 8."""
    return min(8, max(2, os.cpu_count() or 1))


def _decode_all(paths: List[Path], workers: Optional[int] = None) -> np.ndarray:
    with ThreadPoolExecutor(max_workers=workers or decode_workers()) as pool:
        arrays = list(pool.map(decode_image, paths))
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        raise DataError(f"the challenge needs images of one size; found {sorted(shapes)[:3]} ...")
    return np.stack(arrays) if arrays else np.zeros((0, 1, 1, 3), np.uint8)


def load_backgrounds(layout: Layout, workers: Optional[int] = None):
    items = layout.items("only_bg_t")
    return items, torch.from_numpy(_decode_all([it.path for it in items], workers))


def load_foregrounds(layout: Layout, pairs, indices: List[int]):
    """Decode the chosen originals and their masks; masks must match their image's size."""
    images = _decode_all([pairs[i][0].path for i in indices])
    masks = []
    for j, i in enumerate(indices):
        item, mask_path = pairs[i]
        m = load_mask(mask_path)
        if m.shape != images[j].shape[:2]:
            raise DataError(f"mask {mask_path} is {m.shape[1]}x{m.shape[0]} but image {item.path} is "
                            f"{images[j].shape[1]}x{images[j].shape[0]}")
        masks.append(m)
    return torch.from_numpy(images), torch.from_numpy(np.stack(masks) if masks else np.zeros((0, 1, 1), bool))


def _dist_setup(device: str):
    """(world size, rank, this rank's device). Under NCCL each rank owns the GPU of its LOCAL_RANK,
    set before the process group starts so collectives run on the right device."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1 and device.startswith("cuda"):
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', rank))}"
        torch.cuda.set_device(torch.device(device))
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device.startswith("cuda") else "gloo")
    return world, rank, device


def _broadcast(value, rank: int, world: int):
    if world == 1:
        return value
    box = [value if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def run_challenge(model: BgModel, data: str | Path, store: Store, cfg: ChallengeConfig,
                  out_dir: Optional[str | Path] = None, progress: bool = True,
                  figures: Optional[Callable[[ChallengeReport, Path], Dict[str, str]]] = None
                  ) -> Optional[ChallengeReport]:
    """Run (or resume, or extend) the challenge; returns the report on rank 0 and None on other ranks.

    Verdict rows go to `store` as they come; the run stays open until `runs.record(report, store)`.

    `figures(report, out_dir) -> {name: path}` draws the --full figures (`reporting.figures.challenge_figures`);
    it is passed in because drawing lives in a higher layer than the engine.
    """
    t0 = time.time()
    world, rank, device = _dist_setup(cfg.device)
    layout = discover(data, variants=["original", "only_bg_t"])
    check_compatible(model, layout.classes)
    protocols.check_spec(cfg.protocol, model.spec.to_dict())
    pairs = layout.foregrounds()
    fg_ids = [it.image_id for it, _ in pairs]
    fg_labels = np.array([it.label for it, _ in pairs])
    bg_items, backgrounds = load_backgrounds(layout)
    bg_labels = np.array([it.label for it in bg_items])
    plan = SamplePlan.build(cfg.seed, fg_ids, fg_labels, sample=cfg.sample, halfwidth=cfg.halfwidth,
                            chunk=cfg.chunk_size(world), first=cfg.first_chunk(world))

    run_id = prov = None
    if rank == 0:
        prov = runs.Provenance.of("challenge", cfg.identity(), model=model, layout=layout, seed=cfg.seed)
        run_id = store.find_resumable("challenge", prov.model, prov.spec, prov.data_fingerprint, prov.config,
                                      statuses=("running", "sampled"))
        if run_id is not None:
            done_before = len(store.challenge_results(run_id))
            console.status(f"resuming challenge run {run_id}: {done_before}/{len(pairs)} foregrounds already done")
        else:
            run_id = runs.start(store, prov)
    run_id = _broadcast(run_id, rank, world)
    done = {r["image_id"]: r for r in store.challenge_results(run_id)}

    model = model.to(device).eval()
    engine = ChallengeEngine(model, backgrounds.to(device), torch.from_numpy(bg_labels), mapping=cfg.mapping,
                             batch_size=cfg.batch_size, precision=cfg.precision, verify_safety=cfg.verify_safety)
    bg_index = {it.image_id: j for j, it in enumerate(bg_items)}
    for r in done.values():  # warm the ordering with what earlier runs learnt
        if r["fooling_bg"] in bg_index:
            engine.warm(bg_index[r["fooling_bg"]], int(r["label"]))

    matrix = None
    if cfg.full:
        path = matrix_path(store, run_id, migrate=rank == 0)
        if rank == 0 and not path.exists():
            np.lib.format.open_memmap(path, mode="w+", dtype=np.uint8, shape=(len(pairs), len(bg_items))).flush()
        if world > 1:
            dist.barrier()
        matrix = np.load(path, mmap_mode="r+")

    fooled_by_id = {i: bool(r["fooled"]) for i, r in done.items()}
    buffer: List[tuple] = []
    todo = sum(1 for s, e in plan.chunks() for i in plan.shard(s, e, rank, world) if fg_ids[i] not in done)
    bar = console.progress(enabled=progress and rank == 0, total=todo,
                           desc="challenge --full" if cfg.full else "challenge", unit="fg")

    def flush() -> None:
        if matrix is not None:
            matrix.flush()  # rows reach the disk before the store says they are done
        store.add_challenge_results(run_id, buffer)
        buffer.clear()

    def run_chunk(mine: List[int]) -> None:
        """Verdicts (or full rows) for foregrounds `mine` (positions into `pairs`), stored as they come."""
        fg_images, fg_masks = load_foregrounds(layout, pairs, mine)
        clean = {}
        for s in range(0, len(mine), cfg.batch_size):
            preds = engine.predict_uint8(fg_images[s:s + cfg.batch_size].to(device)).cpu().tolist()
            clean.update({mine[s + k]: p for k, p in enumerate(preds)})

        def record(r: FgResult) -> None:
            i = mine[r.index]
            bg = bg_items[r.fooling_bg].image_id if r.fooled else None
            buffer.append((fg_ids[i], int(fg_labels[i]), int(clean[i]), int(r.fooled), int(r.pairs), bg,
                           int(r.fooling_pred) if r.fooled else None))
            fooled_by_id[fg_ids[i]] = bool(r.fooled)
            bar.update(1)
            if len(buffer) >= cfg.save_every:
                flush()

        local = list(range(len(mine)))
        if cfg.full:
            for j in local:
                row = engine.full_row(fg_images[j], fg_masks[j])
                matrix[mine[j]] = row
                wrong = np.nonzero(row != fg_labels[mine[j]])[0]
                record(FgResult(j, bool(len(wrong)), len(row), int(wrong[0]) if len(wrong) else -1,
                                (int(row[wrong[0]]) if row[wrong[0]] != 255 else -1) if len(wrong) else -2))
        else:
            engine.verdicts(fg_images, fg_masks, fg_labels[mine], local, on_result=record, progress=False)
        flush()

    held = seen = 0  # never-fooled foregrounds, and foregrounds, in the done prefix (all ranks)
    for start, end in plan.chunks():
        mine = [i for i in plan.shard(start, end, rank, world) if fg_ids[i] not in done]
        if mine:
            run_chunk(mine)
        if plan.halfwidth is None:
            continue
        counts = torch.tensor([sum(not fooled_by_id[fg_ids[i]] for i in plan.shard(start, end, rank, world)),
                               end - start if rank == 0 else 0], dtype=torch.long,
                              device=device if world > 1 else "cpu")
        if world > 1:
            dist.all_reduce(counts)
        held, seen = held + int(counts[0]), seen + int(counts[1])
        if plan.should_stop(held, seen):
            break
    bar.close()
    # NCCL reduces device tensors only; gloo takes CPU ones
    pairs_here = torch.tensor([engine.stats.pairs], dtype=torch.long, device=device if world > 1 else "cpu")
    verified = _reduce_verified(engine, world, device)
    if world > 1:
        dist.all_reduce(pairs_here)
        dist.barrier()
    if rank != 0:
        return None
    report = summarize(store.challenge_results(run_id), run_id, model, layout, pairs, bg_items, fg_labels,
                       bg_labels, matrix, plan=plan, cfg=cfg)
    report.pairs = int(pairs_here.item())
    report.seconds = round(time.time() - t0, 2)
    report.precision = verified
    if figures is not None and report.full:
        report.files.update(figures(report, Path(out_dir or store.path.parent / f"challenge_{run_id}")))
    report.provenance, report.store_path = prov, str(store.path.resolve())
    return report


def matrix_path(store: Store, run_id: int, migrate: bool = True) -> Path:
    """Where a --full run keeps its prediction matrix: `challenge_<run>.npy` beside the store, a
    uint8 .npy that `np.load(path, mmap_mode="r")` opens (255: a class outside the dataset's).

    Earlier versions named the same .npy content `challenge_<run>.u8`; a partial file of that name
    is renamed (by rank 0 only, `migrate`), so a run resumes with the rows it already computed.
    """
    path = store.path.parent / f"challenge_{run_id}.npy"
    old = path.with_suffix(".u8")
    if migrate and old.is_file() and not path.exists():
        os.replace(old, path)
    return path


def _reduce_verified(engine: ChallengeEngine, world: int, device: str = "cpu") -> Optional[dict]:
    """bf16-verified counts summed over ranks, deviations and delta their maximum (None for other precisions)."""
    if engine.verifier is None:
        return None
    st = engine.verifier.stats.as_dict()
    summed = ("composites", "rechecked", "calibration", "audited")
    maxed = ("max_deviation", "max_spread", "calibration_deviation", "delta", "exceeded")
    if world > 1:
        s = torch.tensor([float(st[k]) for k in summed], dtype=torch.float64, device=device)
        m = torch.tensor([float(st[k]) for k in maxed], dtype=torch.float64, device=device)
        dist.all_reduce(s)
        dist.all_reduce(m, op=dist.ReduceOp.MAX)
        st.update({k: int(v) for k, v in zip(summed, s.tolist())})
        st.update(dict(zip(maxed, m.tolist())))
        st["exceeded"] = bool(st["exceeded"])
    return st


def summarize(verdict_rows, run_id, model, layout, pairs, bg_items, fg_labels, bg_labels, matrix,
              plan: Optional[SamplePlan] = None, cfg: Optional[ChallengeConfig] = None) -> ChallengeReport:
    """The challenge's numbers from its verdict rows (and, with --full, the prediction matrix).

    Writes nothing: neither the store nor figures (those are drawn by `reporting.figures`).
    """
    rows = {r["image_id"]: r for r in verdict_rows}
    fg_ids = [it.image_id for it, _ in pairs]
    # a sampled run: the estimate is over the longest done prefix of the seeded order
    n_sample = done_prefix(plan.order, fg_ids, rows) if plan is not None else len(fg_ids)
    estimate = n_sample < len(fg_ids) and cfg is not None and cfg.sampled
    if estimate:
        if n_sample == 0:
            raise RuntimeError(f"challenge run {run_id} has no verdicts in its sample")
        sel = np.array(sorted(plan.order[:n_sample]))
        fg_ids = [fg_ids[i] for i in sel]
        fg_labels = fg_labels[sel]
    missing = [i for i in fg_ids if i not in rows]
    if missing:
        raise RuntimeError(f"challenge run {run_id} is missing {len(missing)} foregrounds after all ranks finished")
    fooled = np.array([bool(rows[i]["fooled"]) for i in fg_ids])
    clean_ok = np.array([rows[i]["clean_pred"] == rows[i]["label"] for i in fg_ids])
    chal = accuracy(~fooled)
    clean = accuracy(clean_ok)
    sample = None
    if cfg is not None and cfg.sampled:
        sample = {"seed": cfg.seed, "n": len(fg_ids), "population": len(pairs), "requested": cfg.sample,
                  "halfwidth_target": cfg.halfwidth, "halfwidth": wilson_halfwidth(int((~fooled).sum()), len(fooled))}
    per_class = []
    asr_rows: List[tuple] = []
    full = None
    files: Dict[str, str] = {}
    fool_rates = None
    if matrix is not None:
        m = np.asarray(matrix)
        assert (verdicts_from_matrix(m, fg_labels) == fooled).all()
        asr = attack_success_rates(m, fg_labels, bg_labels)
        fool_rates = class_fool_rates(m, fg_labels, bg_labels, len(layout.classes))
        top = top_backgrounds(asr, bg_labels, k=5)
        asr_rows = [(it.image_id, int(c), float(a)) for it, c, a in zip(bg_items, bg_labels, asr)]
        full = {"matrix": str(Path(matrix.filename)), "top5": {layout.classes[c]: [
            {"bg": bg_items[j].image_id, "asr": float(asr[j]), "path": str(bg_items[j].path)} for j in js]
            for c, js in sorted(top.items())}}
    for c, name in enumerate(layout.classes):
        sel = fg_labels == c
        row = {"class": name, "n": int(sel.sum()), "clean": float(clean_ok[sel].mean()) if sel.any() else float("nan"),
               "challenge": float((~fooled[sel]).mean()) if sel.any() else float("nan")}
        if fool_rates is not None:
            row["class_fool_rate"] = float(fool_rates[c])
        per_class.append(row)
    return ChallengeReport(model=model.spec.name, data=str(layout.root), run_id=run_id, challenge_accuracy=chal,
                           clean_accuracy=clean, fooled=int(fooled.sum()), total=len(fooled), per_class=per_class,
                           full=full, files=files, estimate=estimate, sample=sample, asr_rows=asr_rows,
                           model_label=runs.model_label(model.spec.name, model.spec.to_dict()))
