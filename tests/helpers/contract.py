"""The contract every registered measure keeps, as checks a test calls for one measure.

A measure that runs a model is run through its generated command (`bgbench probe NAME`), and
then: it is recorded once, with its per-image rows in its declared table; the summary read back
from the store equals what the command printed and what the in-memory result says; the result's
summary carries the run id; `bgbench runs` shows its declared headline; the report renders its
sections. Nothing here names a particular measure, so a new measure is covered as it is.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

from bgbench.measures.registry import Measure
from bgbench.runs import run_measure

SRC = Path(__file__).resolve().parents[2] / "src"
ARCH = "timm:test_resnet"
TORCHRUN_SCRIPT = Path(__file__).with_name("cli_under_torchrun.py")


def probe_args(measure: Measure, data: Path, db: Path, out: Path) -> List[str]:
    """The measure's command (`bgbench probe NAME`, or its own: `bgbench eval`), every option at
    its default."""
    command = ["probe", measure.name] if measure.command == "probe" else [measure.name]
    args = [*command, "--model", ARCH, "--data", str(data), "--db", str(db), "--json", "--quiet"]
    return args + (["--out", str(out / measure.name)] if measure.pictures else [])


def run_probe(run_cli, measure: Measure, data: Path, db: Path, out: Path) -> dict:
    proc = run_cli(*probe_args(measure, data, db, out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)  # strict JSON: one document, no NaN


def strict(value):
    """`value` as the command's --json prints it (NaN as null, tuples as lists)."""
    from bgbench.cli.output import to_json
    return json.loads(to_json(value))


def check_recorded(store, measure: Measure, printed: dict) -> int:
    """Recorded once, done, rows in its table; what the command printed is what is stored: the
    summary read back from the rows (a measure with a pure summary), and every stored metric
    among the printed numbers (every measure)."""
    run_id = printed["run_id"]
    runs = [r for r in store.runs(measure.kind)]
    assert [r["id"] for r in runs] == [run_id] and runs[0]["status"] == "done"
    assert measure.table and store.probe_rows(measure.table.name, run_id), f"no rows in {measure.table}"
    if measure.command == "probe":
        stored = strict(measure.read(store, run_id).to_dict())
        assert {k: printed[k] for k in stored} == stored
    shown = list(_numbers(printed))
    values = [m["value"] for m in store.metrics(run_id) if m["value"] is not None]
    assert values, f"{measure.name} stored no metric"
    missing = [v for v in values if not any(abs(v - x) <= 1e-12 * max(1.0, abs(v)) for x in shown)]
    assert not missing, f"{measure.name}: stored metrics not printed: {missing[:3]}"
    return run_id


def _numbers(doc):
    """Every number in a JSON document."""
    if isinstance(doc, bool):
        return
    if isinstance(doc, (int, float)):
        yield float(doc)
    elif isinstance(doc, dict):
        for v in doc.values():
            yield from _numbers(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from _numbers(v)


def check_in_memory(measure: Measure, data: Path, db: Path) -> None:
    """The API's result: its summary equals the stored one and carries the run id once recorded."""
    import bgbench
    from bgbench.models import create_model
    from bgbench.data.resolve import class_folders
    cfg = measure.config()
    result = run_measure(measure, create_model(ARCH, classes=class_folders(data)), data, cfg, progress=False)
    run_id = bgbench.record(result, db)
    assert result.summary().run_id == run_id
    from bgbench.store import Store
    with Store(db) as store:
        assert strict(measure.read(store, run_id).to_dict()) == strict(result.summary().to_dict())


def check_headline(run_cli, measure: Measure, db: Path, run_id: int) -> None:
    proc = run_cli("runs", "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr
    shown = {r["id"]: r["result"] for r in json.loads(proc.stdout)}
    assert measure.headlines, f"{measure.name} declares no headline"
    assert shown[run_id] is not None and shown[run_id].split("=")[0].split("[")[0] in \
        {h.metric for h in measure.headlines}, shown[run_id]


def check_report(report, measure: Measure, store=None, run_id=None) -> None:
    """The measure's first section is on the page, and every other section the report made for it
    (a gallery needs pictures a run may not have) is rendered; with a store and the run, the first
    section shows the run's stored headline (as a percentage, or to three decimals), or says it has
    none."""
    import html as markup
    page = report.index.read_text(encoding="utf-8")
    assert measure.sections[0].name in report.sections, measure.sections[0].name
    for spec in measure.sections:
        if spec.name in report.sections:
            assert f'class="section-{spec.name}"' in page, spec.name
    if store is None or not measure.headlines:
        return
    spec = measure.sections[0]
    start = page.index(f'class="section-{spec.name}"')
    section = markup.unescape(page[start:page.find("</section>", start)])
    metrics = {(m["name"], m["variant"]): m["value"] for m in store.metrics(run_id)}
    values = [metrics[(h.metric, h.variant)] for h in measure.headlines if metrics.get((h.metric, h.variant)) is not None]
    if not values:  # e.g. every saliency map of a random network is flat: no value, shown as a dash
        assert any((h.metric, h.variant) in metrics for h in measure.headlines), f"{measure.name} stored no headline"
        assert ">-<" in page[start:page.find("</section>", start)], \
            f"{measure.name}: the section hides that its headline has no value"
        return
    value = values[0]
    shown = {f"{100 * value:.1f}%", f"{100 * value:+.1f}%", f"{value:.3f}", f"{value:+.3f}"}
    assert any(text in section for text in shown), f"{measure.name}: the section does not show {sorted(shown)}"


def run_under_torchrun(jobs: List[List[str]], db: Path) -> subprocess.CompletedProcess:
    """Every given command (argument lists), in one `torchrun --nproc-per-node 2` launch (start-up
    paid once), recording into `db`."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "BGBENCH_DB": str(db), "OMP_NUM_THREADS": "1"}
    listing = Path(db).with_suffix(".jobs.json")
    listing.write_text(json.dumps([[str(a) for a in job] for job in jobs]), encoding="utf-8")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           str(TORCHRUN_SCRIPT), str(listing)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def table_rows(store, measure: Measure, run_id: int) -> list:
    """A run's rows, without run_id, in a canonical order (numbers rounded to float32's precision
    would hide a real difference, so they are compared exactly)."""
    return sorted(tuple(v for k, v in dict(r).items() if k != "run_id") for r in store.probe_rows(measure.table.name,
                                                                                              run_id))


def world_size(run) -> Dict[str, int]:
    return json.loads(run["config"]).get("world_size")
