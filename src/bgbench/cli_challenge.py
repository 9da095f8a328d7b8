"""`bgbench challenge`: the Backgrounds Challenge (also under `torchrun -m bgbench challenge`)."""
from __future__ import annotations

import argparse
import json


def register(sub) -> None:
    from .cli import _add_db_arg, _add_model_args
    from .classes import Mapping
    p = sub.add_parser("challenge", help="adversarial backgrounds: challenge accuracy, fooled foregrounds, ASR")
    _add_model_args(p)
    p.add_argument("--data", required=True, help="dataset root with original/, only_bg_t/ and fg_mask/")
    p.add_argument("--mapping", choices=[m.value for m in Mapping], default=Mapping.ARGMAX.value)
    p.add_argument("--precision", choices=["fp32", "bf16-verified", "bf16", "fp16"], default="fp32",
                   help="fp32 is exact; bf16-verified runs bf16 and recomputes every composite whose decision "
                        "margin is within the measured bf16 error in fp32 (the predictions of fp32); plain "
                        "bf16/fp16 autocast is not exact")
    p.add_argument("--verify-safety", type=float, metavar="F",
                   help="bf16-verified: safety factor on the largest measured spread of bf16-fp32 logit "
                        "deviations (default 4, recorded)")
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
    p.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true")
    _add_db_arg(p)
    p.set_defaults(func=cmd_challenge)

    from .leaderboard import FORMATS
    p = sub.add_parser("leaderboard", help="models in the store ranked by challenge accuracy, with published rows")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument("--no-reported", dest="reported", action="store_false", help="only rows measured here")
    _add_db_arg(p)
    p.set_defaults(func=cmd_leaderboard)


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from .leaderboard import leaderboard, render
    from .store import Store
    with Store(args.db) as store:
        print(render(leaderboard(store, include_reported=args.reported), args.format))
    return 0


def cmd_challenge(args: argparse.Namespace) -> int:
    from .evaluate.challenge_run import ChallengeConfig, run_challenge
    from .models import create_model
    from .store import Store
    cfg = ChallengeConfig(batch_size=args.batch_size, mapping=args.mapping, precision=args.precision,
                          full=args.full, save_every=args.save_every, device=args.device, sample=args.sample,
                          halfwidth=args.halfwidth, seed=args.seed,
                          **({} if args.verify_safety is None else {"verify_safety": args.verify_safety}))
    model = create_model(args.model, checkpoint=args.checkpoint, trust_checkpoint=args.trust_checkpoint,
                         norm=args.norm)
    with Store(args.db) as store:
        report = run_challenge(model, args.data, store, cfg, out_dir=args.out, progress=not args.quiet)
        if report is None:  # not rank 0
            return 0
        if args.json:
            print(json.dumps(report.to_dict(), indent=1))
        else:
            print(report.table())
            print(f"{report.pairs} composites in {report.seconds:.1f}s; run {report.run_id} stored in {store.path}")
    return 0
