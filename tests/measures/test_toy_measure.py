"""The proof of the Measure registry: a new measure, written in this one file, runs through its
generated command, is recorded, has a headline in `bgbench runs`, prints strict JSON and gets a
report section, with no other file changed; and the contract every measure keeps holds for it.

The toy measure is flip consistency: the share of images whose prediction survives a horizontal
flip (a model that reads the object should not care which way it faces)."""
from dataclasses import dataclass, field

import pytest

from bgbench.measures.base import ModelMeasure, ProbeConfig
from bgbench.measures.registry import Headline, SectionSpec, register_measure, unregister_measure
from bgbench.measures.result import Summary
from bgbench.options import flag
from bgbench.store.schema import TableRow
from conftest import run_cli
from helpers import contract


@dataclass(kw_only=True)
class FlipConfig(ProbeConfig):
    horizontal: bool = field(default=True, metadata=flag("--vertical", "flip top to bottom instead",
                                                         action="store_false"))


@dataclass(frozen=True, slots=True)
class FlipRow(TableRow):
    """One image's row: its table's columns follow from the fields."""
    image_id: str
    label: int
    pred: int
    pred_flipped: int


@dataclass
class FlipSummary(Summary):
    consistency: float
    images: int

    def document(self):
        return {"consistency": self.consistency, "images": self.images}

    def lines(self):
        return [f"flip consistency: {self.consistency:.3f} over {self.images} images"]

    def metrics(self):
        return [("flip_consistency", "", self.consistency, None, None, self.images)]


class Flip(ModelMeasure):
    """The whole measure: what it is, each batch's rows, and the summary of the rows."""

    name = "flip"
    help = "prediction consistency under a flip"
    needs = ("model",)
    config = FlipConfig
    row = FlipRow
    key = ("image_id",)
    headlines = (Headline("flip_consistency", label="flip consistency"),)
    sections = (SectionSpec("flip", "Flip consistency", f"{__name__}:section",
                            template="<p>consistency {{ '%.3f'|format(data.summary.consistency) }} "
                                     "(run {{ data.run_id }})</p>"),)

    def rows(self, run, batch):
        flipped = batch.x.flip(-1 if run.cfg.horizontal else -2)
        pred, pred_f = run.model(batch.x).argmax(1).tolist(), run.model(flipped).argmax(1).tolist()
        return [FlipRow(it.image_id, it.label, p, q) for it, p, q in zip(batch.items, pred, pred_f)]

    def summarize(self, rows, config):
        return FlipSummary(sum(r.pred == r.pred_flipped for r in rows) / len(rows), len(rows))


def section(ctx, subject):
    found = TOY.stored(ctx, subject)
    return None if found is None else {"run_id": found[0]["id"], "summary": found[1].to_dict()}


TOY = Flip()


@pytest.fixture(scope="module")
def flip():
    measure = register_measure(TOY)
    yield measure
    unregister_measure(measure.name)


@pytest.fixture(scope="module")
def recorded(flip, synth_root, tmp_path_factory):
    import bgbench
    tmp = tmp_path_factory.mktemp("toy")
    db = tmp / "toy.db"
    printed = contract.run_probe(run_cli, flip, synth_root, db, tmp)
    return {"db": db, "printed": printed, "report": bgbench.report(db, tmp / "site", progress=False), "tmp": tmp}


def test_it_runs_through_its_generated_command_and_prints_strict_json(flip, recorded):
    assert set(recorded["printed"]) == {"run_id", "consistency", "images"} and recorded["printed"]["images"] == 36
    assert "--vertical" in run_cli("probe", "flip", "--help").stdout


def test_it_keeps_the_contract(flip, recorded, synth_root, tmp_path):
    from bgbench.store import Store
    with Store(recorded["db"]) as store:
        run_id = contract.check_recorded(store, flip, recorded["printed"])
    contract.check_in_memory(flip, synth_root, tmp_path / "api.db")
    contract.check_headline(run_cli, flip, recorded["db"], run_id)
    contract.check_report(recorded["report"], flip)
    assert "consistency 0." in recorded["report"].index.read_text(encoding="utf-8")


def test_an_option_from_its_config_reaches_the_engine(flip, synth_root, tmp_path):
    """--vertical flips top to bottom: a different input, so rows differ from the horizontal run's
    unless the model ignores both flips (then the test would prove nothing: checked)."""
    import json
    db = tmp_path / "v.db"
    docs = [json.loads(run_cli(*contract.probe_args(flip, synth_root, db, tmp_path), *extra).stdout)
            for extra in ((), ("--vertical",))]
    from bgbench.store import Store
    with Store(db) as store:
        rows = [contract.table_rows(store, flip, d["run_id"]) for d in docs]
        configs = [json.loads(store.get_run(d["run_id"])["config"])["horizontal"] for d in docs]
    assert configs == [True, False] and rows[0] != rows[1]
