"""`bgbench probe <probe>`: one subcommand per registered measure that runs a model on a dataset.

Nothing here is written per probe: the subcommands, their help and their flags come from the
Measure registry. A measure's config fields that declare a flag (`options.flag`) become its
options; the options every probe shares follow from its config's fields (a model with
--device/--batch-size and every model option, --class-map included; --seed and --mapping where the config has them; --out where
the measure writes pictures). Every probe then runs the same way: build the model, compute
(under torchrun each rank computes its share and rank 0 records), record, print the result.
"""
from __future__ import annotations

import argparse
import dataclasses

from ..measures.registry import Measure, list_measures
from ..options import flagged_fields
from .arguments import add_config_flags, add_model_args, add_output_args, load_model
from .output import emit, open_store, run_output_dir, stored_in

#: Config fields the shared arguments fill in (the model's, and the mapping of predictions).
SHARED_FIELDS = ("batch_size", "device")


def register(sub) -> None:
    probes = list_measures("probe")
    p = sub.add_parser("probe", help="RIVAL10 probes: " + ", ".join(m.title or m.name for m in probes))
    inner = p.add_subparsers(dest="probe", required=True, metavar="PROBE")
    for measure in probes:
        add_probe(inner, measure)


def add_probe(inner, measure: Measure) -> None:
    """The subcommand of one probe measure, its flags read from its config's declaration."""
    config = measure.config
    p = inner.add_parser(measure.name, help=measure.help.replace("%", "%%"),
                         description=(measure.description or measure.help).replace("%", "%%"))
    add_model_args(p, config)
    p.add_argument("--data", required=True,
                   help=f"dataset root with {measure.data_help} (the IN-9 layout), or a RIVAL10 release (its root, "
                        f"read at its test split, or ROOT/train)")
    add_config_flags(p, config)
    if measure.pictures:
        p.add_argument("--out", help=measure.pictures_help)
    add_output_args(p)
    p.set_defaults(measure=measure)


def run(args: argparse.Namespace) -> int:
    """Build the model, compute through the API (under torchrun each rank computes its share; rank
    0 writes the pictures, records and prints)."""
    from ..api import probe
    from ..distributed import launched
    from ..recording import record
    measure: Measure = args.measure
    names = {f.name for f, _ in flagged_fields(measure.config)} | set(SHARED_FIELDS)
    cfg = measure.config(**{f.name: getattr(args, f.name) for f in dataclasses.fields(measure.config)
                            if f.name in names and hasattr(args, f.name)})  # its checks run in `__post_init__`
    model = load_model(args)
    options = dataclasses.asdict(cfg)
    if not launched().main:
        probe(measure.name, model, args.data, progress=False, **options)
        return 0
    with open_store(args) as store:
        writes = bool(measure.pictures) and getattr(cfg, measure.pictures) > 0
        with run_output_dir(getattr(args, "out", None), store.path, measure.kind, writes=writes) as out_dir:
            result = probe(measure.name, model, args.data, out_dir=out_dir, progress=not args.quiet, **options)
        stored_in(record(result, store), store.path)
    return emit(args, result.to_dict(), result.text())
