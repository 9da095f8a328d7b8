"""Issue 37's GPU run: the CUDA smoke test and the real-size figures, into OUT/results.json (every
figure, every stage's status and error) and OUT/results.md (the table), with OUT/logs.txt.

    python benchmarks/gpu/run.py --out OUT [--device cuda] [--tiny] [--deadline EPOCH] [--setup FILE]

`benchmarks/gpu/run.sh` installs what a bare machine lacks, then runs this. Why it is built so:
- A GPU is lent for minutes and a check cannot be rewritten during them, so nothing may end the run
  early: each stage runs in its own process under its own time limit (and the run's deadline), a
  failed or stopped stage is recorded with its error in one line, and the next stage runs. OUT is
  rewritten after every stage, so a run killed from outside still leaves the stages it finished.
- Stages are forked from this process after it has imported torch, timm and bgbench once: a fresh
  interpreter pays those imports again (about 4 s a stage on a small CPU). This process never
  touches CUDA, so each stage initialises it for itself, and a stage that breaks the CUDA context
  breaks only itself. Each stage leads its own process group, which a time limit kills whole.
- The figures are the benchmark scripts' own (`benchmarks/*.py`, run as scripts with `--json`), so
  the numbers here are the ones their tables print; nothing is measured twice.
- The compiled forwards, whose one-off compile takes an uncertain minute or two, are timed last
  (`eval_compiled`), so a slow compile can squeeze only itself.
- `--device cpu --tiny` runs the same stages at toy sizes (timm's test_resnet, 32-px images, two
  a class, one torch thread, `TORCH_COMPILE_DISABLE=1` so that --compile is a no-op): the suite
  runs it (tests/test_gpu_script.py), so a renamed flag or a moved benchmark breaks CI instead of
  the GPU run.
"""
from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing
import os
import platform
import runpy
import signal
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, List, NamedTuple, Optional

BENCH = Path(__file__).resolve().parents[1]
REPO = BENCH.parent
SCHEMA = "bgbench-gpu-run/1"
#: What the parent imports before forking, so that no stage pays for it (best effort: a module
#: that fails to import here fails in its stage, with its error recorded there).
PRELOAD = ("numpy", "PIL.Image", "torch", "torchvision", "timm", "sklearn.linear_model", "cv2", "pytest",
           "bgbench.cli", "bgbench.api", "bgbench.models", "bgbench.evaluation.predict", "bgbench.training",
           "bgbench.variants.synth", "bgbench.store")
#: timm's published ResNet-50 at 224 px with AMP (huggingface/pytorch-image-models, results/
#: benchmark-infer-amp-nchw-*.csv at commit 90cae8c5): images/s eager and with torch.compile.
ANCHORS = ({"card": "RTX 4090", "eager": 4303, "compiled": 8039,
            "source": "benchmark-infer-amp-nchw-pt291-cu128-4090.csv, ...-4090-dynamo.csv"},
           {"card": "RTX PRO 6000 Blackwell Max-Q", "eager": 6459, "compiled": 12188,
            "source": "benchmark-infer-amp-nchw-pt291-cu130-pro6000maxq.csv, ...-pro6000maxq-dynamo.csv"})


@dataclass(frozen=True)
class Sizes:
    """Every size a stage uses: the GPU run's, or the toy ones of --tiny."""

    arch: str
    size: int
    per_class: int
    batch: int
    repeats: int
    workers_grid: tuple
    challenge_batch: int
    sample: int
    train_per_class: int
    forward_seconds: float
    probes_batch: int


#: 450 images x 8 variants = 3,600 224-px JPEGs = 15 batches of 240 (one shape: one compile).
REAL = Sizes(arch="resnet50", size=224, per_class=50, batch=240, repeats=2, workers_grid=(1, 2, 4, 8, 16),
             challenge_batch=256, sample=45, train_per_class=20, forward_seconds=3.0, probes_batch=128)
TINY = Sizes(arch="test_resnet", size=32, per_class=2, batch=8, repeats=1, workers_grid=(1, 2), challenge_batch=16,
             sample=9, train_per_class=2, forward_seconds=0.2, probes_batch=9)
#: eval_throughput.py's forward modes: eager ones first, compiled ones in the last stage; the
#: decoding-thread grid runs on the last (fastest) mode of each.
EAGER = ("eager", "channels_last", "bf16")
COMPILED = ("compile", "bf16+channels_last+compile")


@dataclass(frozen=True)
class Run:
    """What every stage sees."""

    device: str
    tiny: bool
    work: Path

    @property
    def sizes(self) -> Sizes:
        return TINY if self.tiny else REAL

    def figures_file(self, stage: str) -> Path:
        """Where a stage's figures go: written by the stage (or its script) so that the parent reads
        them even when the stage is stopped or fails after writing some."""
        return self.work / f"{stage}.figures.json"


class Outcome(NamedTuple):
    """A stage's result when it is not plainly 'ok' (a plain dict of figures is)."""

    status: str
    note: Optional[str]
    figures: dict


@dataclass(frozen=True)
class Stage:
    """One step of the run: a function of the Run, with its time limits."""

    name: str
    limit: float  # seconds, on the GPU
    tiny_limit: float
    reserve: float  # seconds kept for it while earlier stages run (not in tiny mode: all are short)
    fn: Callable[[Run], object]


STAGES: List[Stage] = []


#: A run is comfortable when the time left holds about this many times the stages' reserves (the
#: H200's whole run took 245 s against 215 s of reserves; at --budget 250 an H100 run had its data,
#: eval, challenge and probes stages stopped at the shares left to them).
COMFORT = 1.8


def stage(name: str, limit: float, tiny_limit: float, reserve: float):
    """Register a stage, in the order of definition."""
    def register(fn):
        STAGES.append(Stage(name, limit, tiny_limit, reserve, fn))
        return fn
    return register


def script(run: Run, stage_name: str, name: str, *args) -> dict:
    """Run benchmarks/NAME as a script in this (forked) process, its figures written by its --json."""
    out = run.figures_file(stage_name)
    sys.argv = [str(BENCH / name), *map(str, args), "--json", str(out)]
    sys.path[:0] = [str(BENCH)]
    try:
        runpy.run_path(str(BENCH / name), run_name="__main__")
    except SystemExit as e:  # a script that ends with sys.exit(0) succeeded
        if e.code not in (0, None):
            raise
    return json.loads(out.read_text())


# -- the stages ----------------------------------------------------------------------------------
@stage("env", 60, 60, 5)
def env(run: Run) -> Outcome:
    """The machine and software the figures come from: the card is named from torch itself."""
    import torch
    from importlib.metadata import PackageNotFoundError, version
    info = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "cpu": _cpu_name(), "cpu_count": os.cpu_count(), "usable_cpus": len(os.sched_getaffinity(0)),
            "load_average": os.getloadavg()[0], "device": run.device, "packages": {}}
    for name in ("torchvision", "timm", "transformers", "open_clip_torch", "grad-cam", "captum", "scikit-learn",
                 "opencv-python-headless", "numpy", "pillow", "bgbench"):
        try:
            info["packages"][name] = version(name)
        except PackageNotFoundError:
            info["packages"][name] = None
    info["card"] = info["cpu"]
    if run.device.startswith("cuda"):
        props = torch.cuda.get_device_properties(torch.device(run.device))
        info.update(card=torch.cuda.get_device_name(torch.device(run.device)), capability=list(torch.cuda.
                    get_device_capability(torch.device(run.device))), memory_gib=props.total_memory / 2 ** 30,
                    multiprocessors=props.multi_processor_count, cudnn=torch.backends.cudnn.version(),
                    bf16_supported=torch.cuda.is_bf16_supported(), fp32_settings=_fp32_settings())
    return Outcome("ok", info["card"], info)


def _fp32_settings() -> dict:
    """Whether an fp32 convolution or matmul on CUDA runs as TF32 by default (eval runs them so; the
    challenge turns TF32 off)."""
    import torch
    try:
        return {"cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
                "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32}
    except RuntimeError as e:  # a PyTorch that refuses the legacy flags once the newer API was used
        return {"error": one_line(str(e))}


@stage("gpu_tests", 240, 60, 5)
def gpu_tests(run: Run) -> Outcome:
    """`pytest -m gpu tests/gpu`, each test's outcome kept as it comes (a stopped run keeps them)."""
    import pytest
    outcomes = Outcomes(run.figures_file("gpu_tests"))
    code = pytest.main(["-m", "gpu", "-q", "-p", "no:cacheprovider", "--rootdir", str(REPO), "-c",
                        str(REPO / "pyproject.toml"), str(REPO / "tests" / "gpu")], plugins=[outcomes])
    return outcomes.outcome(int(code))


@stage("data", 120, 60, 10)
def data(run: Run) -> Outcome:
    """The real-size set (Synthetic-9 at 224 px as JPEG q75), made once for every later stage."""
    sys.path[:0] = [str(BENCH)]
    from realsize_data import realsize_dataset
    s = run.sizes
    t = time.perf_counter()
    root = realsize_dataset(per_class=s.per_class, size=s.size, progress=False)
    figures = {"root": str(root), "per_class": s.per_class, "size": s.size, "seconds": time.perf_counter() - t,
               "images": sum(1 for _ in root.glob("*/val/*/*.JPEG"))}
    return Outcome("ok", f"{figures['images']} JPEGs of {s.size} px ({s.per_class} a class, every variant) in "
                         f"{figures['seconds']:.0f} s", figures)


def eval_throughput(run: Run, stage_name: str, modes: tuple) -> dict:
    """eval_throughput.py on every variant of the real-size set (3,600 images: long enough to time a
    GPU), each of `modes` against its own pure forward, then the decoding-thread grid."""
    s = run.sizes
    return script(run, stage_name, "eval_throughput.py", "--realsize", "--per-class", s.per_class, "--size", s.size,
                  "--variants", "all", "--arch", s.arch, "--batch-size", s.batch, "--repeats", s.repeats,
                  "--device", run.device, "--speedups", *modes, "--workers-grid", *s.workers_grid)


@stage("capacity", 90, 60, 15)
def capacity(run: Run) -> dict:
    """capacity.py: bgbench's own work per image with a null model (the feed from the pixel cache, the
    probes' batches, the challenge's search) and the first pass by number of decoding processes."""
    s = run.sizes
    return script(run, "capacity", "capacity.py", "--per-class", s.per_class, "--size", s.size, "--repeats",
                  s.repeats, "--pass-repeats", s.repeats + 1, "--processes", *s.workers_grid,
                  *([] if run.tiny else ["--card-rate", "2728"]),  # an H100's strict fp32 ResNet-50 forward
                  "--no-probes",  # the probes' proxy: this machine's CPU
                  *(["--challenge-fg", "16"] if run.tiny else []))


@stage("eval", 180, 60, 30)
def eval_eager(run: Run) -> dict:
    """The eager forwards: fp32, channels-last and bf16 autocast (the grid on bf16)."""
    return eval_throughput(run, "eval", EAGER)


@stage("challenge", 150, 60, 40)
def challenge(run: Run) -> dict:
    """challenge_speed.py on a sample of foregrounds against every background, fp32 and bf16-verified,
    without upstream's loop (minutes at real size, and CPU-bound)."""
    s = run.sizes
    return script(run, "challenge", "challenge_speed.py", "--arch", s.arch, "--realsize", "--per-class", s.per_class,
                  "--size", s.size, "--train-per-class", s.train_per_class, "--sample", s.sample, "--no-reference",
                  "--batch-size", s.challenge_batch, "--device", run.device, "--forward-seconds", s.forward_seconds,
                  "--workdir", run.work / "challenge",
                  *(["--no-startup", "--models", "probe:original"] if run.tiny else []))


@stage("dfr", 60, 60, 15)
def dfr(run: Run) -> dict:
    """dfr.py --rate: the feature extraction that precedes every DFR fit."""
    s = run.sizes
    return script(run, "dfr", "dfr.py", "--rate", "--arch", s.arch, "--per-class", s.per_class, "--size", s.size,
                  "--batch-size", s.batch, "--repeats", s.repeats, "--device", run.device)


@stage("probes", 120, 60, 20)
def probes(run: Run) -> dict:
    """probes.py on the real-size set: noise, saliency, features and ablate against their baselines."""
    s = run.sizes
    return script(run, "probes", "probes.py", "--realsize", "--arch", s.arch, "--per-class", s.per_class, "--size",
                  s.size, "--batch-size", s.probes_batch, "--repeats", s.repeats, "--device", run.device)


@stage("eval_compiled", 300, 60, 90)
def eval_compiled(run: Run) -> dict:
    """The compiled forwards (fp32, and bf16 channels-last: timm's compiled anchor's kind), last."""
    return eval_throughput(run, "eval_compiled", COMPILED)


class Outcomes:
    """A pytest plugin: every test's outcome (and its `record_property` facts), written to `path`
    after each one."""

    def __init__(self, path: Path):
        self.path, self.tests = path, []

    def pytest_collectreport(self, report):
        if report.skipped or report.failed:
            self._add(report.nodeid, "skipped" if report.skipped else "error", report, 0.0)

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            outcome = {"passed": "passed", "skipped": "skipped"}.get(report.outcome, "failed")
            self._add(report.nodeid, outcome if report.when == "call" or outcome == "skipped" else "error", report,
                      report.duration)

    def _add(self, nodeid, outcome, report, seconds):
        message = None
        if outcome != "passed":
            longrepr = report.longrepr
            message = (longrepr[2] if isinstance(longrepr, tuple) else
                       getattr(getattr(longrepr, "reprcrash", None), "message", None) or report.longreprtext)
        self.tests.append({"test": nodeid, "outcome": outcome, "seconds": round(seconds, 2),
                           "message": one_line(message) if message else None,
                           "properties": dict(getattr(report, "user_properties", []))})
        self.path.write_text(json.dumps(self.counts(), indent=1))

    def counts(self) -> dict:
        c = {k: sum(t["outcome"] == k for t in self.tests) for k in ("passed", "failed", "error", "skipped")}
        return {**c, "tests": self.tests}

    def outcome(self, exit_code: int) -> Outcome:
        c = self.counts()
        c["exit_code"] = exit_code
        note = ", ".join(f"{c[k]} {k}" for k in ("passed", "failed", "error", "skipped") if c[k])
        if c["failed"] or c["error"] or exit_code not in (0, 5):
            return Outcome("failed", note or f"pytest exit code {exit_code}", c)
        if not c["passed"]:
            reasons = sorted({t["message"] for t in self.tests if t["message"]})
            return Outcome("skipped", "; ".join(reasons) or "no test ran", c)
        return Outcome("ok", note, c)


# -- running a stage -----------------------------------------------------------------------------
def one_line(text: str, limit: int = 400) -> str:
    """The first non-empty line of `text`, cut to `limit` characters: errors are one line."""
    line = next((ln.strip() for ln in str(text).splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _child(st: Stage, run: Run, log: Path) -> None:
    """A stage's process: its own group, its output in its log, its outcome in a status file."""
    os.setsid()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # line-buffered: a stopped stage keeps its lines
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    status = {"status": "failed", "note": None, "error": None}
    try:
        if run.tiny:  # toy models gain nothing from a second thread but its waits on a busy machine (CI's)
            import torch
            torch.set_num_threads(1)
        result = st.fn(run)
        outcome = result if isinstance(result, Outcome) else Outcome("ok", None, result)
        run.figures_file(st.name).write_text(json.dumps(outcome.figures, indent=1, default=str))
        status.update(status=outcome.status, note=outcome.note)
    except BaseException as e:  # SystemExit too: a script's argparse error or its own exit message
        traceback.print_exc()
        text = str(e) if not isinstance(e, SystemExit) or not isinstance(e.code, int) else f"exit {e.code}"
        status["error"] = f"{type(e).__name__}: {one_line(text) or 'no message'}"
    finally:
        (run.work / f"{st.name}.status.json").write_text(json.dumps(status))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def run_stage(st: Stage, run: Run, limit: float) -> dict:
    """One stage in a forked process, stopped (with its whole process group) after `limit` seconds."""
    log = run.work / f"{st.name}.log"
    for old in (run.figures_file(st.name), run.work / f"{st.name}.status.json"):  # a reused --work's
        old.unlink(missing_ok=True)
    proc = multiprocessing.get_context("fork").Process(target=_child, args=(st, run, log), name=f"stage-{st.name}")
    t0 = time.perf_counter()
    proc.start()
    proc.join(limit)
    timed_out = proc.is_alive()
    if timed_out:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.join()
    record = {"status": "failed", "seconds": round(time.perf_counter() - t0, 1), "limit_s": round(limit),
              "note": None, "error": None, "figures": _read_json(run.figures_file(st.name))}
    status = _read_json(run.work / f"{st.name}.status.json")
    if timed_out:
        record.update(status="timeout", error=f"stopped after its {limit:.0f} s limit")
    elif status is None:
        record["error"] = f"the stage's process ended with exit code {proc.exitcode} and no status"
    else:
        record.update(status)
    if record["status"] in ("failed", "timeout"):
        record["log_tail"] = _tail(log, 25)
    return record


def _read_json(path: Path):
    """A stage's file, or None when it never wrote it (or was stopped while writing it)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _tail(path: Path, lines: int) -> List[str]:
    """The last lines of a log, for the JSON of a stage that failed: its traceback's end."""
    try:
        return path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def _cpu_name() -> str:
    """The CPU's model name: the 'card' of a CPU-mode run, and the host of a GPU's."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def preload() -> None:
    """Import what every stage needs once, here (see the module docstring); failures are the stages'."""
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - recorded by the stage that needs it
            pass


# -- output --------------------------------------------------------------------------------------
def write_outputs(results: dict, run: Run, out: Path) -> None:
    """results.json, results.md and logs.txt (every stage's log so far, the last 200 kB of each)."""
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    from report import markdown
    (out / "results.md").write_text(markdown(results))
    parts = []
    for name in results["stages"]:
        log = run.work / f"{name}.log"
        if log.is_file():
            parts.append(f"===== {name} =====\n{log.read_bytes()[-200_000:].decode(errors='replace')}")
    (out / "logs.txt").write_text("\n".join(parts))


def main(argv=None) -> int:
    """Every chosen stage in order, OUT rewritten after each; exit status 1 if one failed or was stopped."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for results.json, results.md and logs.txt")
    ap.add_argument("--device", default="cuda", help="torch device of every model stage (default cuda)")
    ap.add_argument("--tiny", action="store_true", help="toy sizes: the suite's check that the script runs")
    ap.add_argument("--work", help="scratch folder, kept (default: a new one in the temporary folder, removed at "
                    "the end: OUT/logs.txt holds the logs)")
    ap.add_argument("--deadline", type=float, help="Unix time by which every stage has ended (default: now + "
                    "450 s, 180 s with --tiny)")
    ap.add_argument("--setup", help="the JSON run.sh wrote about its install step")
    ap.add_argument("--stages", nargs="+", choices=[s.name for s in STAGES], help="run only these stages")
    args = ap.parse_args(argv)
    import tempfile
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    scratch = None if args.work else tempfile.TemporaryDirectory(prefix="bgbench-gpu-")  # removed at exit
    run = Run(args.device, args.tiny, Path(args.work or scratch.name).resolve())
    run.work.mkdir(parents=True, exist_ok=True)
    # every stage writes here, never into the user's ~/.bgbench or ~/.cache, and never goes online
    os.environ.update(BGBENCH_CACHE=str(run.work / "cache"), BGBENCH_DB=str(run.work / "results.db"),
                      HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    if args.tiny:  # read when torch._dynamo is imported, below: torch.compile returns the module as it is
        os.environ["TORCH_COMPILE_DISABLE"] = "1"
    started = time.time()
    deadline = args.deadline or started + (180 if args.tiny else 450)
    results = {"schema": SCHEMA, "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "device": args.device, "tiny": args.tiny, "sizes": asdict(run.sizes), "anchors": list(ANCHORS),
               "random_weights": True, "stages": {}}
    if args.setup:
        results["stages"]["setup"] = _read_json(Path(args.setup)) or {"status": "failed",
                                                                       "error": f"no setup record at {args.setup}"}
    sys.path[:0] = [str(Path(__file__).resolve().parent)]
    preload()
    chosen = [s for s in STAGES if not args.stages or s.name in args.stages]
    comfortable = sum(s.reserve for s in chosen) * COMFORT
    if not args.tiny and deadline - time.time() < comfortable:
        print(f"warning: {deadline - time.time():.0f} s left for {len(chosen)} stages that want about "
              f"{comfortable:.0f} s: the early ones will be cut to leave the later ones their share (run.sh "
              f"--budget {comfortable + 30:.0f}, or fewer stages with --stages)", file=sys.stderr, flush=True)
    for i, st in enumerate(chosen):
        left = deadline - time.time() - (0 if args.tiny else sum(later.reserve for later in chosen[i + 1:]))
        limit = min(st.tiny_limit if args.tiny else st.limit, left)
        if limit < 5:
            results["stages"][st.name] = {"status": "skipped", "seconds": 0, "note": "no time left before the "
                                          "run's deadline", "error": None, "figures": None}
        else:
            print(f"[{time.time() - started:5.0f}s] {st.name} (limit {limit:.0f} s)", flush=True)
            results["stages"][st.name] = run_stage(st, run, limit)
            r = results["stages"][st.name]
            print(f"        {r['status']} in {r['seconds']} s" + (f": {r['error']}" if r["error"] else ""), flush=True)
        results["seconds"] = round(time.time() - started, 1)
        write_outputs(results, run, out)
    bad = [n for n, r in results["stages"].items() if r["status"] in ("failed", "timeout")]
    print(f"wrote {out / 'results.json'} and {out / 'results.md'}" + (f"; not ok: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
