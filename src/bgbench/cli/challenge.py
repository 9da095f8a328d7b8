"""`bgbench challenge`: the Backgrounds Challenge (also under `torchrun -m bgbench challenge`)."""
from __future__ import annotations

import argparse

from ..evaluate.challenge_config import PRECISIONS
from .common import add_db_arg, add_mapping_arg, add_model_args, add_output_args, create_model, emit


def register(sub) -> None:
    p = sub.add_parser("challenge", help="adversarial backgrounds: challenge accuracy, fooled foregrounds, ASR")
    add_model_args(p)
    p.add_argument("--data", required=True, help="dataset root with original/, only_bg_t/ and fg_mask/")
    add_mapping_arg(p)
    p.add_argument("--precision", choices=PRECISIONS, default="fp32",
                   help="fp32 is exact; bf16/fp16 autocast is for GPUs")
    p.add_argument("--full", action="store_true",
                   help="compute every foreground x background prediction (uint8 memmap): ASR, class fool "
                        "rates, top-5 backgrounds grid and ASR histogram")
    p.add_argument("--save-every", type=int, default=16, help="store progress every N foregrounds")
    p.add_argument("--out", help="folder for --full figures (default: beside the results store)")
    add_output_args(p)
    add_db_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..evaluate.challenge_run import ChallengeConfig, run_challenge
    from ..store import Store
    cfg = ChallengeConfig(batch_size=args.batch_size, mapping=args.mapping, precision=args.precision,
                          full=args.full, save_every=args.save_every, device=args.device)
    model = create_model(args)
    with Store(args.db) as store:
        report = run_challenge(model, args.data, store, cfg, out_dir=args.out, progress=not args.quiet)
        where = store.path
    if report is None:  # not rank 0: rank 0 reports
        return 0
    emit(args, report.to_dict(), f"{report.table()}\n{report.pairs} composites in {report.seconds:.1f}s; "
                                 f"run {report.run_id} stored in {where}")
    return 0
