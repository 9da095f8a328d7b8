"""The shortcut table: Whac-A-Mole's row per model (IN-1k accuracy, IN-W, Carton, SIN, IN-R and IN-9
gaps) beside BG-Gap, challenge accuracy and ImageNet-X's background error ratio, from stored runs;
and, for a model derived from another (DFR ...), which shortcut its fix made worse."""
from dataclasses import dataclass, field
from typing import Optional, Tuple

from ...options import flag
from ..analysis import AnalysisMeasure, Reads
from ..registry import SectionSpec, register_measure


@dataclass(frozen=True)
class ShortcutsConfig:
    """Which stored runs the table reads, and the seed of the paired changes' bootstrap."""

    run_ids: Optional[Tuple[int, ...]] = field(default=None, metadata=flag(
        "--runs", "only these runs (default: every finished run)", type=int, nargs="+", metavar="RUN"))
    models: Optional[Tuple[str, ...]] = field(default=None, metadata=flag(
        "--models", "only these models (names or fnmatch patterns such as 'timm:resnet*')", nargs="+",
        metavar="PATTERN"))
    seed: int = field(default=0, metadata=flag(
        "--seed", "seed of the paired changes' bootstrap (default %(default)s)"))


class Shortcuts(AnalysisMeasure):
    name = "shortcuts"
    position = 80
    source = ("Whac-A-Mole (Li et al., CVPR 2023): the table of shortcut gaps (IN-W, Carton, SIN, "
              "IN-R, IN-9) beside BG-Gap, the challenge and ImageNet-X's background error ratio")
    checked_against = ("tests/measures/test_shortcuts.py (each gap from its source's own code; the "
                       "table and a derived model's paired changes)")
    title = "shortcut table"
    reads = Reads.STORE
    config = ShortcutsConfig
    help = ("the shortcut table: per model, Whac-A-Mole's IN-1k accuracy and IN-W, Carton, SIN, IN-R and IN-9 gaps beside "
            "BG-Gap, challenge accuracy and ImageNet-X's background error ratio, and each shortcut's paired change from a "
            "base model to one derived from it (DFR ...)")
    sections = (SectionSpec("shortcuts", "Shortcuts beside backgrounds (Whac-A-Mole)",
                            f"{__name__}.section:shortcuts_section", scope="page"),)

    def of_subjects(self, store, subjects, seed: int = 0):
        """The table of these report subjects, and the changes of every derived model among them."""
        from .changes import changes
        from .table import ShortcutTable, build_blocks, model_rows
        def metrics(run_id: int):
            return {(m["name"], m["variant"]): m for m in store.metrics(run_id)}
        models = model_rows(subjects)
        return ShortcutTable(build_blocks(models, metrics), changes(store, models, seed))


MEASURE = register_measure(Shortcuts)
