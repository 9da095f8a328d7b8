"""`bgbench challenge`: the Backgrounds Challenge (also under `torchrun -m bgbench challenge`)."""
from __future__ import annotations

import argparse

from ..measures.challenge.config import ChallengeConfig
from .arguments import add_config_flags, config_options, add_model_args, add_output_args, load_model
from .output import emit, open_store, stored_in


def register(sub) -> None:
    p = sub.add_parser("challenge", help="adversarial backgrounds: challenge accuracy, fooled foregrounds, ASR")
    add_model_args(p, ChallengeConfig)
    p.add_argument("--data", required=True, help="dataset root with original/, only_bg_t/ and fg_mask/")
    add_config_flags(p, ChallengeConfig)
    p.add_argument("--out", help="folder for --full figures (default: challenge_<run>/ beside the results store)")
    add_output_args(p)


def run(args: argparse.Namespace) -> int:
    from ..api import challenge
    from ..console import status
    from ..recording import record
    options = config_options(args, ChallengeConfig)
    model = load_model(args)
    with open_store(args) as store:
        report = challenge(model, args.data, store, out_dir=args.out, progress=not args.quiet,
                           batch_size=args.batch_size, device=args.device, **options)
        if report is None:  # not rank 0: rank 0 records and reports
            return 0
        record(report, store)
        where = store.path
    sample = report.sample  # --halfwidth H asked for, but the run ended with a wider interval: say why
    if sample and sample.get("halfwidth_target") is not None and sample["halfwidth"] > sample["halfwidth_target"]:
        ended = ("all foregrounds were evaluated, so the share is exact for this dataset"
                 if sample["n"] >= sample["population"] else f"the run stopped at --sample {sample['requested']}")
        status(f"note: the 95% half-width is {100 * sample['halfwidth']:.1f} points, not the --halfwidth "
               f"{100 * sample['halfwidth_target']:.1f} asked for: {ended} ({sample['n']} of "
               f"{sample['population']} foregrounds)")
    status(f"{report.pairs} composites in {report.seconds:.1f}s")
    stored_in(report.run_id, where)
    return emit(args, report.to_dict(), report.text())
