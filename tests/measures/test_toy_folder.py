"""A measure needs its folder alone: a toy measure's package, written into a folder on
`bgbench.measures`'s path and imported by nothing, is found by the registry's scan of the measure
packages (no catalog line, no list in a test), and gets its command, its store table, its report
section and its page in the manual, listed after today's measures.

The toy is mirror consistency: the share of images whose prediction survives a top-to-bottom flip.
(tests/measures/test_toy_measure.py holds a toy to the whole contract; this one proves the folder.)"""
import json
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import run_cli
from helpers import contract

NAME = "mirror_toy"

PACKAGE = textwrap.dedent('''
    """Mirror consistency: the share of images whose prediction survives a top-to-bottom flip."""
    from dataclasses import dataclass, field
    from typing import Optional

    from ...options import flag
    from ..base import ModelMeasure, ProbeConfig
    from ..registry import Headline, SectionSpec, register_measure


    @dataclass(kw_only=True)
    class MirrorConfig(ProbeConfig):
        upright: bool = field(default=False, metadata=flag("--upright", "compare with no flip at all",
                                                           action="store_true"))


    @dataclass
    class MirrorSummary:
        consistency: float
        images: int
        run_id: Optional[int] = None

        def to_dict(self):
            return {"consistency": self.consistency, "images": self.images}

        def text(self):
            return f"mirror consistency: {self.consistency:.3f} over {self.images} images"

        def metric_rows(self):
            return [("mirror_consistency", "", self.consistency, None, None, self.images)]


    class Mirror(ModelMeasure):
        name = "NAME"
        help = "prediction consistency under a top-to-bottom flip"
        source = "a toy of the test suite: the share of predictions a vertical flip leaves unchanged"
        checked_against = "tests/measures/test_toy_folder.py (counted from the stored rows)"
        needs = ("model",)
        config = MirrorConfig
        columns = (("image_id", "TEXT NOT NULL"), ("label", "INTEGER NOT NULL"), ("pred", "INTEGER NOT NULL"),
                   ("pred_flipped", "INTEGER NOT NULL"))
        key = ("image_id",)
        headlines = (Headline("mirror_consistency", label="mirror consistency"),)
        sections = (SectionSpec("NAME", "Mirror consistency", f"{__name__}:section",
                                template="<p>mirror {{ '%.3f'|format(data.consistency) }}</p>"),)

        def rows(self, run, batch):
            flipped = batch.x if run.cfg.upright else batch.x.flip(-2)
            pred, pred_f = run.model(batch.x).argmax(1).tolist(), run.model(flipped).argmax(1).tolist()
            return [(it.image_id, it.label, p, q) for it, p, q in zip(batch.items, pred, pred_f)]

        def summarize(self, rows, config):
            return MirrorSummary(sum(r[2] == r[3] for r in rows) / len(rows), len(rows))


    def section(ctx, subject):
        found = MEASURE.stored(ctx, subject)
        return None if found is None else found[1].to_dict()


    MEASURE = register_measure(Mirror)
''').replace("NAME", NAME)


@pytest.fixture
def toy_folder(tmp_path, monkeypatch):
    """The toy's package in a folder of its own on `bgbench.measures`'s path; removed afterwards."""
    import bgbench.measures
    from bgbench.measures.registry import unregister_measure
    folder = tmp_path / "measures_elsewhere" / NAME
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(PACKAGE, encoding="utf-8")
    monkeypatch.setattr(bgbench.measures, "__path__", [*bgbench.measures.__path__, str(folder.parent)])
    yield folder
    unregister_measure(NAME)
    for module in [m for m in sys.modules if m == f"bgbench.measures.{NAME}" or m.startswith(f"bgbench.measures.{NAME}.")]:
        del sys.modules[module]


def _gen_pages(out: Path) -> None:
    """The manual's generated pages, written into `out` by docs/scripts/gen_pages.py run in this
    process (as test_docs.py runs it, but here where the toy's folder is on the path)."""
    import runpy
    script = Path(__file__).resolve().parents[2] / "docs" / "scripts" / "gen_pages.py"
    argv = sys.argv
    sys.argv = [str(script), str(out)]
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = argv


def test_a_measure_folder_alone_gets_its_command_table_section_and_page(toy_folder, synth_root, tmp_path):
    import bgbench
    from bgbench.measures.registry import get_measure, list_measures
    from bgbench.store import Store
    names = [m.name for m in list_measures()]
    # found by the scan, and listed after every measure that declares its place
    assert names[-1] == NAME and names.index("imagenet_x") < names.index(NAME)
    measure = get_measure(NAME)
    assert measure.kind == f"probe_{NAME}" and measure.table.name == measure.kind
    # its command, with its config's flag
    assert "--upright" in run_cli("probe", NAME, "--help").stdout
    # its run, recorded in its own table
    db = tmp_path / "toy.db"
    printed = contract.run_probe(run_cli, measure, synth_root, db, tmp_path)
    with Store(db) as store:
        rows = contract.table_rows(store, measure, printed["run_id"])
        stored = {(m["name"], m["variant"]): m["value"] for m in store.metrics(printed["run_id"])}
    assert len(rows) == printed["images"] == 36
    counted = sum(r[2] == r[3] for r in rows) / len(rows)  # the summary, counted here from the stored rows
    assert printed["consistency"] == pytest.approx(counted) == pytest.approx(stored[("mirror_consistency", "")])
    # its headline in `bgbench runs`, and its section in the report
    shown = {r["id"]: r["result"] for r in json.loads(run_cli("runs", "--db", db, "--json").stdout)}
    assert shown[printed["run_id"]].startswith("mirror_consistency=")
    report = bgbench.report(db, tmp_path / "site", progress=False)
    assert NAME in report.sections and f"mirror {counted:.3f}" in report.index.read_text(encoding="utf-8")
    # its page in the manual, its line in the measures' index and its command in the reference
    site = tmp_path / "pages"
    _gen_pages(site)
    page = (site / "measures" / f"{NAME}.md").read_text(encoding="utf-8")
    assert measure.source in page and measure.checked_against in page
    assert any(line.startswith("| `mirror_consistency` | (overall)") and line.rstrip(" |").endswith("higher")
               for line in page.splitlines())
    assert f"]({NAME}.md)" in (site / "measures" / "index.md").read_text(encoding="utf-8")
    assert f"## bgbench probe {NAME} {{#" in (site / "reference" / "cli.md").read_text(encoding="utf-8")


def test_without_its_folder_the_toy_is_nowhere():
    """The scan finds only what is on the path: the toy is no measure of the package itself."""
    from bgbench.measures.registry import list_measures
    assert NAME not in [m.name for m in list_measures()]
