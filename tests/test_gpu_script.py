"""benchmarks/gpu/run.sh cannot rot: its CPU mode (`--device cpu --tiny`) runs every stage of the GPU
run end to end at toy sizes, and writes the JSON and the table the GPU run writes."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STAGES = ["setup", "env", "gpu_tests", "data", "capacity", "eval", "challenge", "dfr", "probes", "eval_compiled"]


@pytest.mark.slow  # every stage of run.sh: run it (make test-all) before a GPU session
def test_the_gpu_script_runs_end_to_end_on_the_cpu(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(["bash", str(REPO / "benchmarks" / "gpu" / "run.sh"), "--device", "cpu", "--tiny",
                           tmp_path / "out"], env=env, capture_output=True, text=True, timeout=300)
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    stages = results["stages"]
    assert list(stages) == STAGES, proc.stdout + proc.stderr
    status = {name: r["status"] for name, r in stages.items()}
    errors = {name: (r["error"], r.get("log_tail")) for name, r in stages.items() if r["error"]}
    assert status == {**dict.fromkeys(STAGES, "ok"), "setup": "skipped", "gpu_tests": "skipped"}, errors
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "needs CUDA" in stages["gpu_tests"]["note"]  # pytest -m gpu skipped, in one line
    eval_modes = [m["mode"] for m in stages["eval"]["figures"]["modes"]]
    assert eval_modes == ["eager", "channels_last", "bf16"] and stages["eval"]["figures"]["workers_grid"]
    compiled = stages["eval_compiled"]["figures"]
    assert [m["mode"] for m in compiled["modes"]] == ["compile", "bf16+channels_last+compile"]
    assert compiled["workers_grid"]
    assert {r["precision"] for r in stages["challenge"]["figures"]["rows"]} == {"fp32", "bf16-verified"}
    assert all(r["same_verdicts_as_fp32"] for r in stages["challenge"]["figures"]["rows"])
    assert stages["dfr"]["figures"]["extraction"] > 0
    assert set(stages["probes"]["figures"]) >= {"noise", "saliency", "features", "ablate"}
    table = (tmp_path / "out" / "results.md").read_text()
    card = stages["env"]["figures"]["card"]
    assert f"**{card}** (this run)" in table and "| RTX 4090 (timm) | 4,303 | 8,039 |" in table
    assert "| RTX PRO 6000 Blackwell Max-Q (timm) | 6,459 | 12,188 |" in table
    assert "| gpu_tests | skipped |" in table and "| eval path from the pixel cache, fp32 (eager)" in table
    assert stages["capacity"]["figures"]["feed_cached"] > 0 and "| feed from the pixel cache" in table
    assert (tmp_path / "out" / "logs.txt").is_file()


def _driver():
    """benchmarks/gpu/run.py as a module."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("gpu_run", REPO / "benchmarks" / "gpu" / "run.py")
    module = sys.modules["gpu_run"] = importlib.util.module_from_spec(spec)  # dataclasses look it up
    spec.loader.exec_module(module)
    return module


def test_a_failed_or_stopped_stage_is_recorded_in_one_line_and_the_next_still_runs(tmp_path):
    import time
    gpu = _driver()
    run = gpu.Run("cpu", False, tmp_path)

    def failing(run):
        raise ValueError("no such flag: --sample\n  (the second line of a long message)")

    def hanging(run):
        time.sleep(60)

    records = [gpu.run_stage(gpu.Stage(name, 1, 1, 0, fn), run, limit=2)
               for name, fn in (("failing", failing), ("hanging", hanging), ("fine", lambda run: {"rate": 1.5}))]
    assert records[0]["status"] == "failed" and records[0]["error"] == "ValueError: no such flag: --sample"
    assert any("Traceback" in line for line in records[0]["log_tail"])
    assert records[1]["status"] == "timeout" and records[1]["error"] == "stopped after its 2 s limit"
    assert records[1]["seconds"] < 10
    assert records[2]["status"] == "ok" and records[2]["figures"] == {"rate": 1.5} and records[2]["error"] is None
