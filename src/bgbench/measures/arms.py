"""`ArmsMeasure`: the base of the shortcut measures, which score one model on two sets of images.

Whac-A-Mole (Li et al., CVPR 2023) reads each shortcut as a gap between two accuracies of the same
model: watermarked against clean copies of the same images (ImageNet-W), stylized copies against
ImageNet's val (SIN), renditions against photographs of the same 200 classes (ImageNet-R). Each
set is an *arm*: a dataset layout, and optionally how its images are made on the fly (a watermark
drawn on each decoded image) or how the model's outputs are read (only some classes compete).

It follows the template of every model-running measure (`running.RunningMeasure`): each arm
meets the model, and is predicted by the feed eval uses (`running.predicted`: 1000-class outputs
meet each arm's classes through its class map; torchrun's ranks share each arm's images as eval's
variants); the run is one row per (arm, image): its label and prediction. A subclass gives its
arms (`arms`), the pure summary of the rows (`summarize`), and optionally `recorded` (config keys
of its own, from `run.sets`, its arms) and `arm_rows` (rows of its own: Spurious ImageNet keeps each
image's probability of its class).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, List, Optional

from ..checks import at_least, member
from ..classes import Mapping, mapping_field
from ..evaluation.metrics import REPLICATES
from ..options import flag
from .registry import Command, SectionSpec
from .result import MeasureResult
from .running import Arm, ProbeConfig, RunContext, RunningMeasure, meet_layout, predicted
from ..store.schema import TableRow


@dataclass(kw_only=True)
class ArmsConfig(ProbeConfig):
    """Options every shortcut measure has: the seed of its bootstrap intervals and, for a 1000-class
    model on a dataset of other classes (IN-9), the decision rule."""

    seed: int = field(default=0, metadata=flag("--seed", "seed of the bootstrap behind the intervals (default "
                                                         "%(default)s)"))
    mapping: Mapping = mapping_field()
    bootstrap_replicates: int = REPLICATES

    def __post_init__(self):
        super().__post_init__()
        self.mapping = member("--mapping", self.mapping, Mapping)
        at_least("bootstrap replicates", self.bootstrap_replicates, 1)


@dataclass(frozen=True, slots=True, order=True)
class ArmRow(TableRow):
    """One prediction (a row of an arms measure's table): image `image_id` of class `label` in arm
    `arm`, predicted `pred`."""

    arm: str
    image_id: str
    label: int
    pred: int


class ArmsMeasure(RunningMeasure):
    """A measure that scores one model on its arms (see the module docstring)."""

    command: ClassVar[Command] = Command.PROBE
    needs: ClassVar[tuple] = ("model",)
    data_help: ClassVar[str] = "images (original/)"
    row: ClassVar[type] = ArmRow
    key = ("arm", "image_id")
    #: The note under a gap measure's report section (`gap_section`).
    gap_note: ClassVar[str] = ""

    def arms(self, run: RunContext, layout) -> List[Arm]:
        """The arms of a run on `layout` (the --data dataset), first the reference."""
        raise NotImplementedError

    # -- the template's steps ---------------------------------------------------------------------
    def image_sets(self, run: RunContext):
        """The arms of a run on --data's layout."""
        return self.arms(run, run.layout)

    def meet(self, run: RunContext) -> None:
        """Every arm meets the model, the reference last: the model's input record is its."""
        for arm in reversed(run.sets):
            meet_layout(run, arm.layout)

    def measure(self, run: RunContext):
        arms = run.sets[::-1]  # the reference last, as they met the model
        joined, _ = predicted(run, arms, prefix=f"{self.name}: ")
        if not run.ranks.main:
            return None
        rows = [row for arm in arms for row in self.arm_rows(arm, joined[arm.name])]
        sets = {a.name: {"data": str(a.layout.root), "split": a.layout.split, "images": len(a.items()),
                         "fingerprint": a.layout.fingerprint()} for a in run.sets}
        layout = run.layout
        config = self.run_config(run.cfg, layout, run.ranks, own=self.recorded(run),
                                 images=len(layout.items(layout.variants[0])), after={"arms": sets})
        return MeasureResult(self.name, rows, config, seconds=run.elapsed()), config

    def arm_rows(self, arm: Arm, joined) -> List[Any]:
        """The rows of one arm's joined predictions (`evaluation.predict`): an `ArmRow` per image."""
        return [ArmRow(arm.name, i, int(label), int(pred))
                for i, label, pred in zip(joined.image_ids, joined.labels.tolist(), joined.preds.tolist())]

    def gap_section(self, ctx, subject) -> Optional[dict]:
        """A gap measure's section data for one model on one dataset (None: no run), its `gap_note`
        under the table."""
        found = self.stored(ctx, subject)
        if found is None:
            return None
        run, summary = found
        return {"run_id": run["id"], "summary": summary.to_dict(), "note": self.gap_note}


#: The report section of a gap measure: each arm's accuracy, the gap and the named gaps (inline:
#: the three gap measures share it).
GAP_TEMPLATE = """<table>
  <thead><tr><th>images</th><th class="num">accuracy</th><th class="num">95% interval</th><th class="num">n</th></tr></thead>
  <tbody>
  {% for arm, a in data.summary.accuracy.items() %}<tr><td>{{ arm }}</td><td class="num">{{ a.value|pct }}</td>
    <td class="num">[{{ a.lo|pct }}, {{ a.hi|pct }}]</td><td class="num">{{ a.n }}</td></tr>{% endfor %}
  <tr><td><strong>{{ data.summary.metric }}</strong></td><td class="num"><strong>{{ data.summary.gap.value|pct(1, True) }}</strong></td>
    <td class="num">[{{ data.summary.gap.lo|pct(1, True) }}, {{ data.summary.gap.hi|pct(1, True) }}]</td><td class="num">{{ data.summary.gap.n }}</td></tr>
  {% for name, e in data.summary.extra.items() %}
  {% for arm, a in e.accuracy.items() %}<tr><td>{{ e['class'] }}: {{ arm }}</td><td class="num">{{ a.value|pct }}</td>
    <td class="num">[{{ a.lo|pct }}, {{ a.hi|pct }}]</td><td class="num">{{ a.n }}</td></tr>{% endfor %}
  <tr><td><strong>{{ name }}</strong></td><td class="num"><strong>{{ e.value|pct(1, True) }}</strong></td>
    <td class="num">[{{ e.lo|pct(1, True) }}, {{ e.hi|pct(1, True) }}]</td><td class="num">{{ e.n }}</td></tr>
  {% endfor %}
  </tbody>
</table>
<p class="note">{{ data.note }} Run {{ data.run_id }}; a gap is the shifted images' accuracy minus the reference's
  (Whac-A-Mole's sign: negative when the shift costs accuracy), with a 95% bootstrap interval
  {% if data.summary.gap.paired %}paired over the same images{% else %}over two independent samples{% endif %}.</p>"""


def gap_section_spec(name: str, title: str, package: str) -> SectionSpec:
    """A gap measure's report section: GAP_TEMPLATE with the data of its registered instance's
    `gap_section`."""
    return SectionSpec(name, title, f"{package}:MEASURE.gap_section", template=GAP_TEMPLATE)
