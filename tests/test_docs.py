"""The manual: its generated pages say what the registry and the parser say, every command in it
parses with bgbench's own parser, and the README stays a two-screen introduction.

The commands of the hand-written pages are run or checked in test_readme.py; here the generated
pages (written by docs/scripts/gen_pages.py into a folder, as MkDocs writes them into the site).
"""
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from bgbench.cli import build_parser
from bgbench.measures.registry import list_measures
from test_readme import DOCS, README, leaf_commands, option_actions, readme_commands, resolve

ROOT = README.parent


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("site_pages")
    proc = subprocess.run([sys.executable, str(ROOT / "docs" / "scripts" / "gen_pages.py"), str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def test_every_registered_measure_has_a_page_naming_its_source(generated):
    measures = list_measures()
    assert len(measures) >= 17
    for m in measures:
        assert m.source and m.checked_against, f"measure {m.name} declares no source or checked_against"
        page = (generated / "measures" / f"{m.name}.md").read_text()
        assert m.source in page and m.checked_against in page
        for h in m.headlines:
            row = next(line for line in page.splitlines() if line.startswith(f"| `{h.metric}` | {h.variant or '(overall)'}"))
            assert row.rstrip(" |").endswith("higher" if h.higher_is_better else "lower"), row
        assert f"]({m.name}.md)" in (generated / "measures" / "index.md").read_text()


def test_the_command_reference_is_the_parser(generated):
    page = (generated / "reference" / "cli.md").read_text()
    for command in leaf_commands():
        assert f"## bgbench {command} {{#" in page, command
        parser, _, _ = resolve(command.split())
        for flag in option_actions(parser):
            assert flag in page, f"{command}: {flag} missing from the reference"


def test_the_pictures_are_drawn(generated):
    for name in ("variants.png", "challenge.png", "bg_gap.png"):
        data = (generated / "concepts" / "img" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"img/{name}" in (ROOT / "docs" / "concepts" / "measures.md").read_text()


def _generated_commands(folder: Path):
    for page in folder.rglob("*.md"):
        for block in re.findall(r"```bash\n(.*?)```", page.read_text(), re.S):
            for line in block.splitlines():
                if line.startswith("bgbench "):
                    yield page.name, line


def test_generated_commands_name_real_flags(generated):
    problems = []
    commands = list(_generated_commands(generated))
    assert len(commands) >= len(list_measures())
    for page, text in commands:
        parser, path, rest = resolve(shlex.split(text)[1:])
        actions = option_actions(parser)
        problems += [f"{page}: {text}: no {t}" for t in rest if t.startswith("--") and t not in actions]
        if not path:
            problems.append(f"{page}: {text}: no such command")
    assert not problems, "\n".join(problems)


#: Placeholders of the manual's concrete command lines, for argparse's types.
NUMBERS = {"N": "2", "K": "1", "B": "8", "H": "0.05", "S": "0", "F": "0.5", "Q": "0.5", "P": "0.5", "DEG": "30",
           "K/N": "0/2", "RUN": "1", "RUN_A": "1", "RUN_B": "2"}


def test_every_concrete_manual_command_parses():
    """A line without a synopsis' brackets is a command a user types: bgbench's own parser accepts it
    (so a renamed flag or a value out of its choices fails here)."""
    parser = build_parser()
    checked, problems = 0, []
    for text, tokens in readme_commands():
        if re.search(r"[\[|]|\.\.\.", text):
            continue
        tokens = [NUMBERS.get(t.strip(), t.strip()).replace("$SLURM_ARRAY_TASK_ID", "0") for t in tokens if t.strip()]
        try:
            parser.parse_args(tokens)
            checked += 1
        except SystemExit:
            problems.append(text)
    assert checked >= 30
    assert not problems, "\n".join(problems)


def test_the_scorecard_columns_are_explained_with_their_direction():
    from bgbench.studies.spec import profile_battery
    table = (ROOT / "docs" / "get-started.md").read_text().split("## What each scorecard column means")[1]
    for m in list_measures():
        if m.name not in profile_battery():
            continue
        for h in m.headlines:
            row = next((r for r in table.splitlines() if r.startswith(f"| {h.short or h.label} |")), None)
            assert row is not None, f"{m.name}: no row for {h.short or h.label}"
            assert row.rstrip(" |").endswith("higher" if h.higher_is_better else "lower"), row


def test_the_readme_is_two_screens_with_a_profile_on_the_first():
    lines = README.read_text().splitlines()
    assert len(lines) <= 250
    first = "\n".join(lines[:60])
    assert "bgbench profile --model timm:resnet50.a1_in1k" in first
    assert "<!-- output: profile -->\n```text\n$ bgbench profile" in README.read_text()
    assert DOCS and all(p.suffix == ".md" for p in DOCS)


def _table_functions(section: str) -> set:
    """The function names a markdown table's first column holds (`name(...)` or `name`, several per cell)."""
    names = set()
    for row in section.splitlines():
        if row.startswith("| `"):
            names |= set(re.findall(r"`([a-z_]+)[(`]", row.split("|")[1]))
    return names


def test_the_python_page_lists_the_public_api_with_its_signatures_and_nothing_else_resolves():
    """docs/reference/python.md's table of public functions is `bgbench.__all__`, each row naming the
    function's positional parameters as its signature does (and `**options` where it takes keywords);
    no other public name resolves as `bgbench.NAME` but the subpackages and `__version__`: a name
    added, dropped or reshaped without the page fails."""
    import inspect
    import types
    import bgbench
    page = (ROOT / "docs" / "reference" / "python.md").read_text()
    public = page.partition("## The public functions")[2].partition("\n## ")[0]
    assert _table_functions(public) == set(bgbench.__all__) and len(bgbench.__all__) <= 12
    listed = dict(re.findall(r"^\| `([a-z_]+)\(([^)]*)\)`", public, re.M))
    for name in bgbench.__all__:
        params = inspect.signature(getattr(bgbench, name)).parameters.values()
        positional = [p.name + ("" if p.default is p.empty else f"={p.default!r}") for p in params
                      if p.kind is p.POSITIONAL_OR_KEYWORD]
        keywords = any(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in params)
        assert listed[name].split(", ") == [*positional, *(["**options"] if keywords else [])], name
    reachable = {n for n in dir(bgbench) if not n.startswith("_")
                 and not isinstance(getattr(bgbench, n), types.ModuleType)}
    assert reachable == set(bgbench.__all__)
    for name in ("create_model", "synth", "edit", "leaderboard", "prediction_categories", "list_models"):
        assert not hasattr(bgbench, name), name


def _captured(page: str) -> str:
    """Every captured output block of a page (docs/scripts/capture_outputs.py writes them from real runs)."""
    return "\n".join(re.findall(r"<!-- output: \w+ -->(.*?)<!-- /output -->", page, re.S))


def test_the_get_started_prose_quotes_its_captured_outputs():
    """Every number the prose around the captured outputs gives (a share, a score, points) is one of
    the captured outputs, so rerunning capture_outputs.py cannot leave the prose behind (issue 58: it
    said 89.8% and 12.9% where the run printed 89.3% and 11.8%)."""
    page = (ROOT / "docs" / "get-started.md").read_text()
    captured = _captured(page)
    prose = re.sub(r"<!-- output: \w+ -->.*?<!-- /output -->", "", page, flags=re.S)
    prose = prose.split("## What each scorecard column means")[0]  # the columns table holds no run's numbers
    prose = re.sub(r"`[^`]*`", "", prose)  # commands and names, not results
    # a share (89.3%), a score (0.906) or a difference in points: what a run prints, not a version
    numbers = re.findall(r"(?<![\w.])(?:-?\d+\.\d%|-?\d\.\d{3}(?!\d)|\d+\.\d(?= points))", prose)
    assert len(numbers) >= 8  # the prose does quote the run
    missing = [n for n in numbers if n not in captured]
    assert not missing, f"numbers in get-started.md's prose that no captured output shows: {missing}"


def test_the_demos_stated_time_is_the_captured_runs():
    """'about N minutes' for the demo, wherever the README and get-started say it, is within a quarter
    of the time the captured run printed ("outputs under bgbench-demo/ (181s)")."""
    for page in (README, ROOT / "docs" / "get-started.md"):
        text = page.read_text()
        seconds = int(re.search(r"outputs under bgbench-demo/ \((\d+)s\)", _captured(
            (ROOT / "docs" / "get-started.md").read_text())).group(1))
        stated = [float(m) for m in re.findall(r"demo[^\n]*?about (\d+(?:\.\d+)?) minutes", text)]
        assert stated, page
        for minutes in stated:
            assert abs(60 * minutes - seconds) <= 0.25 * seconds, (page.name, minutes, seconds)


def test_the_benchmarks_page_says_what_a_worst_group_needs():
    """The worst group is the lowest of at least MIN_GROUPS groups of at least MIN_IMAGES images."""
    from bgbench.measures.common.groups import MIN_GROUPS, MIN_IMAGES
    page = " ".join((README.parent / "docs" / "how-to" / "benchmarks.md").read_text().split())
    assert (MIN_GROUPS, MIN_IMAGES) == (2, 10)
    assert "needs at least two groups of at least 10 images" in page


def test_the_models_page_says_which_mean_bare_imagenet_weights_get(tmp_path, capsys):
    """Bare 1000-class weights given to `timm:ARCH --checkpoint` take the mean and std of the
    architecture's default configuration in timm (test_resnet's is 0.5, not ImageNet's), with the
    warning line; the concepts page says so."""
    import timm
    import torch

    from bgbench.models.options import ModelOptions, build
    torch.save(timm.create_model("test_resnet", pretrained=False).state_dict(), tmp_path / "bare.pt")
    model = build(ModelOptions(model="timm:test_resnet", checkpoint=str(tmp_path / "bare.pt")))
    assert model.spec.mean == (0.5, 0.5, 0.5) and model.spec.std == (0.5, 0.5, 0.5)
    assert "assuming the mean (0.5, 0.5, 0.5)" in capsys.readouterr().err
    page = " ".join((README.parent / "docs" / "concepts" / "models.md").read_text().split())
    assert "the mean and std of the architecture's default configuration in timm" in page
