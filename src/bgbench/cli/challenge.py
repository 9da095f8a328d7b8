"""`bgbench challenge`: the Backgrounds Challenge (also under `torchrun -m bgbench challenge`)."""
from __future__ import annotations

import argparse
import dataclasses

from ..measures.challenge.config import PRECISIONS, ChallengeConfig
from .arguments import (add_db_arg, add_mapping_arg, add_model_args, add_output_args, add_protocol_arg, add_seed_arg,
                        config_default, create_model)
from .folders import open_store
from .output import emit, stored_in


def register(sub) -> None:
    p = sub.add_parser("challenge", help="adversarial backgrounds: challenge accuracy, fooled foregrounds, ASR")
    add_model_args(p, ChallengeConfig)
    p.add_argument("--data", required=True, help="dataset root with original/, only_bg_t/ and fg_mask/")
    add_mapping_arg(p, config_default(ChallengeConfig, "mapping"))
    p.add_argument("--precision", choices=PRECISIONS, default=config_default(ChallengeConfig, "precision"),
                   help="fp32 is exact (TF32 off on GPUs); bf16-verified runs bf16, confirms every fooled "
                        "verdict in fp32 (exact) and recomputes in fp32 every composite whose decision margin "
                        "is within delta, the bf16 error measured by random audits: a survivor's verdict is as "
                        "good as the audits; plain bf16/fp16 autocast is not exact. bf16 pays only on hardware with "
                        "bf16 units: GPUs from Ampere on, CPUs with AVX512-BF16 or AMX; elsewhere it is emulated "
                        "and slower than fp32, and the run says so (default %(default)s)")
    p.add_argument("--verify-safety", type=float, default=config_default(ChallengeConfig, "verify_safety"),
                   metavar="F", help="bf16-verified: delta is F x the largest spread of bf16-fp32 logit deviations "
                                     "that the calibration and audits measured (default %(default)s, recorded)")
    p.add_argument("--sample", type=int, metavar="N",
                   help="estimate from the first N foregrounds of a seeded order stratified by class, each against "
                        "every background (exact verdicts, a Wilson interval for the share); rerun with a larger N "
                        "or without --sample to extend the same run")
    p.add_argument("--halfwidth", type=float, metavar="H",
                   help="visit foregrounds in the seeded order and stop once the 95%% interval's half-width is <= H "
                        "(0 < H < 0.5); checked after 16, 32, 64 ... foregrounds (doubling) until that reaches "
                        "max(32, 2 x batch size), then after every such chunk (all x the torchrun processes)")
    add_seed_arg(p, config_default(ChallengeConfig, "seed"), "seed of the foreground order")
    p.add_argument("--full", action="store_true", default=config_default(ChallengeConfig, "full"),
                   help="compute every foreground x background prediction (uint8 .npy memmap): ASR, class fool "
                        "rates, top-5 backgrounds grid and ASR histogram")
    p.add_argument("--save-every", type=int, default=config_default(ChallengeConfig, "save_every"),
                   help="store progress every N foregrounds (default %(default)s)")
    p.add_argument("--out", help="folder for --full figures (default: challenge_<run>/ beside the results store)")
    add_protocol_arg(p)
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import challenge
    from ..console import status
    from ..recording import record
    cfg = ChallengeConfig(batch_size=args.batch_size, mapping=args.mapping, precision=args.precision,
                          full=args.full, save_every=args.save_every, device=args.device, sample=args.sample,
                          halfwidth=args.halfwidth, seed=args.seed, verify_safety=args.verify_safety,
                          protocol=args.protocol)
    model = create_model(args)
    with open_store(args) as store:
        report = challenge(model, args.data, store, out_dir=args.out, progress=not args.quiet,
                           **dataclasses.asdict(cfg))
        if report is None:  # not rank 0: rank 0 records and reports
            return 0
        record(report, store)
        where = store.path
    note = halfwidth_note(report.sample)
    if note:
        status(note)
    status(f"{report.pairs} composites in {report.seconds:.1f}s")
    stored_in(report.run_id, where)
    emit(args, report.to_dict(), report.text())
    return 0


def halfwidth_note(sample) -> str:
    """What to say when --halfwidth H was asked for but the run ended with a wider interval."""
    if not sample or sample.get("halfwidth_target") is None or sample["halfwidth"] <= sample["halfwidth_target"]:
        return ""
    ended = ("all foregrounds were evaluated, so the share is exact for this dataset"
             if sample["n"] >= sample["population"] else f"the run stopped at --sample {sample['requested']}")
    return (f"note: the 95% half-width is {100 * sample['halfwidth']:.1f} points, not the --halfwidth "
            f"{100 * sample['halfwidth_target']:.1f} asked for: {ended} ({sample['n']} of {sample['population']} "
            f"foregrounds)")
