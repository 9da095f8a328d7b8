"""One contract, parametrized over every registered measure (see helpers/contract.py).

The measures that run a model are each run once through their generated command on Synthetic-9,
and once more, all of them, under `torchrun --nproc-per-node 2`; analyses of stored runs have
their command listed. A measure added to the registry is checked here with no change.
"""

import pytest
import torch

from bgbench.measures.registry import LAYOUT_NEEDS, list_measures
from bgbench.store import Store
from conftest import run_cli
from helpers import contract

#: Measures that need ImageNet's own images keep the same contract in test_shortcuts.py, on an
#: ImageNet tree the test writes and a 1000-class model (Synthetic-9 cannot feed them); those that
#: read one benchmark's release only (`LAYOUT_NEEDS`) keep it in that benchmark's test file.
ELSEWHERE = {"imagenet", *LAYOUT_NEEDS}
PROBES = [m for m in list_measures("probe") if not ELSEWHERE & set(m.needs)]
#: Every measure that runs a model through a command: the probes, and eval and the challenge.
RUNS = [m for m in list_measures() if m.command in ("probe", "own") and not ELSEWHERE & set(m.needs)]
ANALYSES = list_measures("analyze")


@pytest.fixture(scope="module")
def recorded(synth_root, tmp_path_factory):
    """Every measure that runs a model, run through its command into one store, and the report."""
    import bgbench
    tmp = tmp_path_factory.mktemp("contract")
    db = tmp / "probes.db"
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # as under torchrun (OMP_NUM_THREADS=1): sums in the same order
    try:
        printed = {m.name: contract.run_probe(run_cli, m, synth_root, db, tmp) for m in RUNS}
    finally:
        torch.set_num_threads(before)
    return {"db": db, "printed": printed, "report": bgbench.report(db, tmp / "site", progress=False), "tmp": tmp}


@pytest.mark.parametrize("measure", RUNS, ids=[m.name for m in RUNS])
def test_a_run_records_once_and_reads_back_what_it_printed(recorded, measure):
    with Store(recorded["db"]) as store:
        contract.check_recorded(store, measure, recorded["printed"][measure.name])


@pytest.mark.parametrize("measure", PROBES, ids=[m.name for m in PROBES])
def test_the_in_memory_summary_carries_its_run_id_and_equals_the_stored_one(synth_root, tmp_path, measure):
    contract.check_in_memory(measure, synth_root, tmp_path / "api.db")


@pytest.mark.parametrize("measure", RUNS, ids=[m.name for m in RUNS])
def test_bgbench_runs_shows_its_headline(recorded, measure):
    contract.check_headline(run_cli, measure, recorded["db"], recorded["printed"][measure.name]["run_id"])


@pytest.mark.parametrize("measure", RUNS, ids=[m.name for m in RUNS])
def test_its_report_sections_show_its_stored_numbers(recorded, measure):
    with Store(recorded["db"]) as store:
        contract.check_report(recorded["report"], measure, store, recorded["printed"][measure.name]["run_id"])


def test_two_processes_equal_one_for_every_probe(recorded, synth_root):
    db2 = recorded["tmp"] / "torchrun.db"
    jobs = [[a for a in contract.probe_args(m, synth_root, db2, recorded["tmp"] / "torchrun") if a != "--json"]
            for m in PROBES]
    contract.run_under_torchrun(jobs, db2)
    with Store(recorded["db"]) as one, Store(db2) as two:
        for m in PROBES:
            (run2,) = two.runs(m.kind)  # recorded once, by rank 0
            assert contract.world_size(run2) == 2, f"{m.name} did not share its work between the ranks"
            run1 = recorded["printed"][m.name]["run_id"]
            assert contract.table_rows(two, m, run2["id"]) == contract.table_rows(one, m, run1), m.name
            m1, m2 = ({(r["name"], r["variant"]): r["value"] for r in s.metrics(rid)} for s, rid in
                      ((one, run1), (two, run2["id"])))
            assert m1 == m2, m.name


@pytest.mark.parametrize("measure", ANALYSES, ids=[m.name for m in ANALYSES])
def test_an_analysis_has_its_command(measure):
    proc = run_cli("analyze", measure.name, "--help")
    assert proc.returncode == 0 and "usage: bgbench analyze " + measure.name in proc.stdout


def test_every_recorded_kind_has_a_headline_and_a_section():
    for m in list_measures():
        if m.kind is not None:
            assert m.headlines, m.name
        assert m.sections, m.name


def test_a_measures_name_is_its_one_identity():
    """The kind, the table and the command follow from the name: a probe's kind and table are
    'probe_<name>', its command `bgbench probe <name>`; eval's and the challenge's kind is their name."""
    names = [m.name for m in list_measures()]
    assert len(set(names)) == len(names) and all(n.isidentifier() for n in names)
    for m in list_measures():
        if m.command == "probe":
            assert m.kind == m.table.name == f"probe_{m.name}", m.name
            assert run_cli("probe", m.name, "--help").returncode == 0
        elif m.command == "own":
            assert m.kind == m.name and run_cli(m.name, "--help").returncode == 0
        assert m.package.rsplit(".", 1)[-1] == m.name, m.name  # the package is named as the measure
