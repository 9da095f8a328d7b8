"""Run several `bgbench` commands, one after another, in this process under torchrun: the launch
and the imports are paid once for all of them (each command joins the same process group).

usage: torchrun --nproc-per-node 2 cli_under_torchrun.py JOBS.json   (a JSON list of argument lists)
"""
import json
import sys

from bgbench.cli import main

for args in json.load(open(sys.argv[1], encoding="utf-8")):
    code = main([str(a) for a in args])
    if code:
        sys.exit(code)
