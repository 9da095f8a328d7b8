"""Run `bgbench probe NAME` for each NAME given, in this process, under torchrun (see contract.py).

usage: torchrun --nproc-per-node 2 probe_under_torchrun.py DATA DB OUT NAME [NAME ...]
"""
import sys
from pathlib import Path

from bgbench.cli import main
from bgbench.measures.registry import get_measure
from helpers.contract import probe_args

data, db, out, *names = sys.argv[1:]
for name in names:
    args = [a for a in probe_args(get_measure(name), Path(data), Path(db), Path(out)) if a != "--json"]
    code = main(args)
    if code:
        sys.exit(code)
