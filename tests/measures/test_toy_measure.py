"""The proof of the Measure registry: a new measure, written in this one file, runs through its
generated command, is recorded, has a headline in `bgbench runs`, prints strict JSON and gets a
report section, with no other file changed; and the contract every measure keeps holds for it.

The toy measure is flip consistency: the share of images whose prediction survives a horizontal
flip (a model that reads the object should not care which way it faces)."""
from dataclasses import asdict, dataclass, field
from typing import ClassVar, Optional

import pytest

from bgbench.measures.registry import Headline, Measure, SectionSpec, register_measure, unregister_measure
from bgbench.measures.result import MeasureResult, stored_summary
from bgbench.options import flag
from bgbench.store import TableSchema, declare_table
from conftest import run_cli
from helpers import contract

TABLE = declare_table(TableSchema("probe_flip", (("image_id", "TEXT NOT NULL"), ("label", "INTEGER NOT NULL"),
                                                 ("pred", "INTEGER NOT NULL"), ("pred_flipped", "INTEGER NOT NULL")),
                                  key=("image_id",)))


@dataclass
class FlipConfig:
    batch_size: int = 16
    device: str = "cpu"
    horizontal: bool = field(default=True, metadata=flag("--vertical", "flip top to bottom instead",
                                                         action="store_false"))


@dataclass
class FlipSummary:
    consistency: float
    images: int
    run_id: Optional[int] = None

    def to_dict(self):
        return {"consistency": self.consistency, "images": self.images}

    def table(self):
        return f"flip consistency: {self.consistency:.3f} over {self.images} images"

    def metric_rows(self):
        return [("flip_consistency", "", self.consistency, None, None, self.images)]


def summarize(rows) -> FlipSummary:
    return FlipSummary(sum(r[2] == r[3] for r in rows) / len(rows), len(rows))


@dataclass
class FlipResult(MeasureResult):
    measure: ClassVar[str] = "flip"

    def summarize(self):
        return summarize(self.rows)


def compute(model, data, cfg: FlipConfig, progress: bool = True):
    import torch

    from bgbench.data.resolve import resolve_layout
    from bgbench.distributed import setup, world_record
    from bgbench.probing.batches import masked_batches
    from bgbench.probing.sharding import ProbeShard
    from bgbench.recording import Provenance
    layout = resolve_layout(data, ["original"])
    shard = ProbeShard(layout.foregrounds(), cfg.batch_size, setup(cfg.device))
    with torch.no_grad():
        for items, x, _ in masked_batches(shard.pairs, cfg.batch_size, shard.ranks.device):
            flipped = x.flip(-1 if cfg.horizontal else -2)
            pred, pred_f = model(x).argmax(1).tolist(), model(flipped).argmax(1).tolist()
            shard.add(items, [(it.image_id, it.label, p, q) for it, p, q in zip(items, pred, pred_f)])
    rows = shard.gathered()
    if rows is None:
        return None
    result = FlipResult(rows=rows, config=asdict(cfg))
    result.provenance = Provenance.of("probe_flip", {**asdict(cfg), **world_record(shard.ranks)}, model=model,
                                      layout=layout)
    return result


def read(store, run_id):
    return stored_summary(store, run_id, "probe_flip", TABLE, lambda rows, config: summarize(rows))


def section(ctx, subject):
    run = subject.latest("probe_flip")
    return None if run is None else {"run_id": run["id"], "summary": read(ctx.store, run["id"]).to_dict()}


TOY = Measure(name="flip", kind="probe_flip", help="prediction consistency under a flip", needs=("model",),
              table=TABLE.name, config=f"{__name__}:FlipConfig", compute=f"{__name__}:compute",
              read=f"{__name__}:read", headlines=(Headline("flip_consistency", label="flip consistency"),),
              sections=(SectionSpec("flip", "Flip consistency", f"{__name__}:section",
                                    template="<p>consistency {{ '%.3f'|format(data.summary.consistency) }} "
                                             "(run {{ data.run_id }})</p>"),))


@pytest.fixture(scope="module")
def flip():
    measure = register_measure(TOY, package=__name__)
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
