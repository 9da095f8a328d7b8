"""`bgbench challenge`: the Backgrounds Challenge (also under `torchrun -m bgbench challenge`)."""
from __future__ import annotations

import argparse
import dataclasses

from ..evaluation.challenge.config import DEFAULT_SAFETY, PRECISIONS
from .common import (add_db_arg, add_mapping_arg, add_model_args, add_output_args, add_protocol_arg, create_model,
                     emit)


def register(sub) -> None:
    p = sub.add_parser("challenge", help="adversarial backgrounds: challenge accuracy, fooled foregrounds, ASR")
    add_model_args(p)
    p.add_argument("--data", required=True, help="dataset root with original/, only_bg_t/ and fg_mask/")
    add_mapping_arg(p)
    p.add_argument("--precision", choices=PRECISIONS, default="fp32",
                   help="fp32 is exact; bf16-verified runs bf16 and recomputes in fp32 every composite whose "
                        "decision margin is within the measured bf16 error (the verdicts of fp32); plain "
                        "bf16/fp16 autocast is not exact")
    p.add_argument("--verify-safety", type=float, default=DEFAULT_SAFETY, metavar="F",
                   help="bf16-verified: safety factor on the largest measured spread of bf16-fp32 logit "
                        "deviations (default %(default)s, recorded)")
    p.add_argument("--sample", type=int, metavar="N",
                   help="estimate from the first N foregrounds of a seeded order stratified by class, each against "
                        "every background (exact verdicts, a Wilson interval for the share); rerun with a larger N "
                        "or without --sample to extend the same run")
    p.add_argument("--halfwidth", type=float, metavar="H",
                   help="visit foregrounds in the seeded order and stop once the 95%% interval's half-width is <= H "
                        "(0 < H < 0.5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the foreground order (default %(default)s)")
    p.add_argument("--full", action="store_true",
                   help="compute every foreground x background prediction (uint8 memmap): ASR, class fool "
                        "rates, top-5 backgrounds grid and ASR histogram")
    p.add_argument("--save-every", type=int, default=16, help="store progress every N foregrounds")
    p.add_argument("--out", help="folder for --full figures (default: beside the results store)")
    add_protocol_arg(p)
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..api import challenge
    from ..evaluation.challenge.config import ChallengeConfig
    from ..runs import record
    from ..store import Store
    cfg = ChallengeConfig(batch_size=args.batch_size, mapping=args.mapping, precision=args.precision,
                          full=args.full, save_every=args.save_every, device=args.device, sample=args.sample,
                          halfwidth=args.halfwidth, seed=args.seed, verify_safety=args.verify_safety,
                          protocol=args.protocol)
    model = create_model(args)
    with Store(args.db) as store:
        report = challenge(model, args.data, store, out_dir=args.out, progress=not args.quiet,
                           **dataclasses.asdict(cfg))
        if report is None:  # not rank 0: rank 0 records and reports
            return 0
        record(report, store)
        where = store.path
    emit(args, report.to_dict(), f"{report.table()}\n{report.pairs} composites in {report.seconds:.1f}s; "
                                 f"run {report.run_id} stored in {where}")
    return 0
