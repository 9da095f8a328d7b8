"""Write the manual's example outputs from real runs, so that none is typed by hand.

Runs `bgbench demo` and then `bgbench profile` of the demo's two models on its small set, and puts
each command's stdout between the `<!-- output: NAME -->` and `<!-- /output -->` markers of
README.md and docs/get-started.md (the work folder's absolute path shown as `./`). Rerun it after a
change that alters what they print; `--demo DIR` reuses a demo already run in DIR (its stdout saved
as DIR/stdout.txt) instead of running it again (about 3 minutes).

    python docs/scripts/capture_outputs.py [--demo DIR]
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "README.md", ROOT / "docs" / "get-started.md")


def run(argv, cwd: Path) -> str:
    print("$", " ".join(argv), file=sys.stderr)
    proc = subprocess.run([sys.executable, "-m", "bgbench", *argv], cwd=cwd, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"{' '.join(argv)} failed:\n{proc.stderr[-3000:]}")
    return proc.stdout


def substitute(name: str, command: str, output: str, work: Path) -> None:
    text = output.replace(f"{work}/", "./").rstrip()
    block = f"<!-- output: {name} -->\n```text\n$ {command}\n{text}\n```\n<!-- /output -->"
    for page in PAGES:
        source = page.read_text()
        new = re.sub(rf"<!-- output: {name} -->.*?<!-- /output -->", lambda _: block, source, flags=re.S)
        if new != source:
            page.write_text(new)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=Path, help="a folder where `bgbench demo --out bgbench-demo` already ran")
    args = parser.parse_args()
    work = args.demo.resolve() if args.demo else Path(tempfile.mkdtemp(prefix="bgbench-docs-"))
    if args.demo:
        demo = (work / "stdout.txt").read_text()
    else:
        demo = run(["demo", "--out", "bgbench-demo"], work)
        (work / "stdout.txt").write_text(demo)
    substitute("demo", "bgbench demo", demo, work)
    profile = ["profile", "--model", "file:bgbench-demo/runs/original/model.pt", "--model",
               "file:bgbench-demo/runs/mixed_rand/model.pt", "--data", "bgbench-demo/synthetic9-small",
               "--out", "bgbench-profile", "--db", "bgbench-profile.db"]
    substitute("profile", "bgbench " + " ".join(profile), run(profile, work), work)


if __name__ == "__main__":
    main()
