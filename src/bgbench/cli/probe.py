"""`bgbench probe <probe>`: probes that run a model on a dataset with masks and record what they measured."""
from __future__ import annotations

import importlib
from typing import List

#: Probe modules (cli/probe_<name>.py), in the order `bgbench probe --help` lists them.
PROBES: List[str] = ["noise", "saliency", "features", "ablate", "attribution"]


def register(sub) -> None:
    p = sub.add_parser("probe", help="RIVAL10 probes: noise sensitivity (RFS), saliency alignment, spurious-feature "
                                     "discovery, attribute ablation, feature attribution")
    inner = p.add_subparsers(dest="probe", required=True, metavar="PROBE")
    for name in PROBES:
        importlib.import_module(f"{__package__}.probe_{name}").register(inner)
