"""The manual's pages that follow from the code, written at build time by mkdocs-gen-files.

Why generated: a page typed by hand drifts from what it describes. Here each measure's page comes
from the measure registry (a new measure gets its page with no page written), the command reference
from bgbench's own argparse parser (the flags are documented once, by the parser), the API reference
from `bgbench.__all__` (mkdocstrings renders the docstrings), the benchmarks and the changelog from
the files they live in (read, not copied, so their authors edit one file), and the concept pictures
from Synthetic-9 drawn by `bgbench.build(..., preset="synthetic-9")` (nothing hand-made).

`python docs/scripts/gen_pages.py OUT` writes the same pages into the folder OUT without MkDocs
(the tests read them that way).
"""
from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Callable, Dict, List

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("COLUMNS", "100")  # argparse wraps help to the terminal: one width for every build


# ---------------------------------------------------------------------------------------------
# The command reference: bgbench's parser, command by command


def _subparsers(parser):
    for action in parser._actions:
        if action.__class__.__name__ == "_SubParsersAction":
            return action
    return None


def leaf_parsers(parser=None, path=()):
    """[(command path, parser, one-line help)] for every command that runs, in the parser's order."""
    from bgbench.cli import build_parser
    parser = parser or build_parser()
    sub = _subparsers(parser)
    if sub is None:
        return [(path, parser, "")]
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    out = []
    for name, child in sub.choices.items():
        for p, leaf, h in leaf_parsers(child, (*path, name)):
            out.append((p, leaf, h or helps.get(name, "")))
    return out


def cli_page() -> str:
    lines = ["# Command reference", "",
             "Generated from bgbench's own parser (`bgbench <command> --help` prints the same text); "
             "guides that use each command are linked from the [how-to guides](../get-started.md#where-next).", ""]
    leaves = leaf_parsers()
    lines += ["| command | what it does |", "|---|---|"]
    for path, _, helptext in leaves:
        name = " ".join(path)
        lines.append(f"| [`bgbench {name}`](#{_anchor(name)}) | {_cell(helptext)} |")
    for path, parser, _ in leaves:
        name = " ".join(path)
        parser.prog = f"bgbench {name}"
        lines += ["", f"## bgbench {name} {{#{_anchor(name)}}}", "", "```text", parser.format_help().rstrip(), "```"]
    return "\n".join(lines) + "\n"


def _anchor(command: str) -> str:
    return "bgbench-" + re.sub(r"[^a-z0-9]+", "-", command.lower()).strip("-")


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


# ---------------------------------------------------------------------------------------------
# One page per measure, from the registry


#: Datasets the cost is worked out for: the demo's test split and IN-9's released val.
COST_DATASETS = (("Synthetic-9 test split of the demo", 450), ("IN-9's released val", 4050))
VARIANTS = ("original", "only_bg_b", "only_bg_t", "no_fg", "only_fg", "mixed_same", "mixed_rand", "mixed_next")


def command_of(measure) -> str:
    return {"probe": f"bgbench probe {measure.name}", "analyze": f"bgbench analyze {measure.name}"}.get(
        measure.command, f"bgbench {measure.name}")


def measure_cost(measure) -> str:
    """Its cost in forwards with its default options: the measure's own count (`Measure.forwards`),
    which the study planner shows too."""
    if measure.command == "analyze":
        return "No forwards: it reads stored eval runs (`--mapping` re-decides them without inference)."
    rows = []
    for label, n in COST_DATASETS:
        forwards, bound = measure.forwards(n, list(VARIANTS), {})
        if forwards is None:
            return ("Not known before the run: one forward per image of ImageNet's val and of the second dataset it "
                    "reads (the planner lists it as `? forwards`).")
        per = f"{'at most ' if bound else ''}{forwards:,} forwards"
        rows.append(f"| {label} ({n:,} images{', 8 variants' if measure.name == 'eval' else ''}) | {per} |")
    note = (" A challenge stops at the first background that fools each foreground, so a model that is "
            "fooled easily costs far less than the ceiling; `--sample N` bounds it.") if measure.name == "challenge" else ""
    return ("With its default options (its own count, which `bgbench study --dry-run` shows per step):" + note + "\n\n"
            "| dataset | cost |\n|---|---|\n" + "\n".join(rows))


def measure_options(measure) -> List[str]:
    """Its options: the config dataclass's flagged fields (flag, API keyword, default, help), or, for a
    measure whose options live in its command (eval, the challenge, the analyses), the command's flags."""
    from bgbench.options import flagged_fields
    from bgbench.signatures import default_of
    rows = ["| flag | keyword (API, study file) | default | what |", "|---|---|---|---|"]
    if measure.config is not None:
        for f, spec in flagged_fields(measure.config):
            default = default_of(measure.config, f.name)
            default = "" if default is dataclasses.MISSING else default
            text = spec["help"]
            try:
                text = text % {"default": default}
            except (KeyError, TypeError, ValueError):
                pass
            rows.append(f"| `{spec['name']}` | `{f.name}` | {_value(default)} | {_cell(text)} |")
    else:
        parser = _parser_of(measure)
        for action in parser._actions if parser else []:
            if not action.option_strings or action.dest in ("help",):
                continue
            flag = max(action.option_strings, key=len)
            default = "" if action.default in (None, False) or action.default == "==SUPPRESS==" else action.default
            text = (action.help or "") % {"default": default, "choices": action.choices} if action.help else ""
            rows.append(f"| `{flag}` | `{action.dest}` | {_value(default)} | {_cell(text)} |")
    return rows


def _value(v) -> str:
    if v in ("", None):
        return ""
    if isinstance(v, (list, tuple)):
        v = " ".join(map(str, v))
    return f"`{v}`"


def _parser_of(measure):
    path = command_of(measure).split()[1:]
    return next((p for names, p, _ in leaf_parsers() if list(names) == path), None)


def measure_page(measure) -> str:
    from bgbench.measures.registry import NEEDS
    command = command_of(measure)
    lines = [f"# {measure.name}: {measure.title or measure.name}", "", measure.help[:1].upper() + measure.help[1:] + ".", ""]
    if measure.description:
        lines += [measure.description[:1].upper() + measure.description[1:] + ".", ""]
    lines += ["## Definition and source", "", f"**Source.** {measure.source}.", "",
              f"**Checked against.** {measure.checked_against}.", ""]
    lines += ["## Headline", ""]
    if measure.headlines:
        lines += ["| metric | variant | what | better |", "|---|---|---|---|"]
        for h in measure.headlines:
            lines.append(f"| `{h.metric}` | {h.variant or '(overall)'} | {_cell(h.label or h.metric)} | "
                         f"{'higher' if h.higher_is_better else 'lower'} |")
        lines += ["", "The scorecard and `bgbench runs` show the first of these a run has."]
    else:
        lines.append("None of its own: it prints a table of a stored eval run (see the command's output).")
    for b in measure.benchmark_headlines:
        shown = ", ".join(f"`{h.metric}{f'[{h.variant}]' if h.variant else ''}` ({_cell(h.short or h.label)})"
                          for h in measure.headlines_on(b, None)) or "headlines that follow from its newest run there"
        lines += ["", f"On data of kind `{b.data_kind}` the scorecard shows {shown}, "
                      f"{'in place of these' if b.replaces else 'beside these'}."]
    lines += ["", "## How to run it", "", "```bash"]
    if measure.command == "probe":
        lines += [f"{command} --model M --data ROOT", "```", "", "From Python: "
                  f"`bgbench.probe(\"{measure.name}\", model, data, **options)`, its options being those "
                  f"below; in a study file: "
                  f"`[measures.{measure.name}]` with the options below as keys."]
    elif measure.command == "own":
        lines += [f"{command} --model M --data ROOT", "```", "",
                  f"In a study file: `[measures.{measure.name}]` with the options below as keys."]
    else:
        lines += [f"{command}{' RUN' if measure.name != 'shortcuts' else ''}", "```", "",
                  f"From Python: `bgbench.analyze(\"{measure.name}\", source, run_id, **options)`; in a study file: "
                  f"`[measures.{measure.name}]` (computed by the report from the eval runs)."]
    lines += ["", "It needs: " + "; ".join(NEEDS[n] for n in measure.needs) + "." if measure.needs else "",
              f"Data: {measure.data_help}." if measure.command == "probe" else ""]
    if measure.profile is not None:
        given = ", ".join(f"`{k} = {json.dumps(v)}`" for k, v in measure.profile.options.items())
        lines += ["", "`bgbench profile` runs it in its standard battery" + (f", with {given}." if given else ".")]
    if measure.report_only:
        lines += ["", "A study runs no step for it: its report computes it from the study's eval runs."]
    lines += ["", "## Options", ""] + measure_options(measure)
    lines += ["", "## Cost", "", measure_cost(measure)]
    stored = [f"run kind `{measure.kind}`" if measure.kind else "not recorded as a run of its own (an analysis)",
              f"per-image table `{measure.table.name}`" if measure.table is not None else ""]
    lines += ["", "## Where it lands", "", "Stored: " + ", ".join(s for s in stored if s) + "."]
    if measure.sections:
        lines += ["Report sections: " + ", ".join(f"*{s.title}*" for s in measure.sections) + "."]
    if measure.shortcut_columns:
        lines += ["Shortcut table (`bgbench analyze shortcuts`): " +
                  ", ".join(f"*{c.title}*" for c in measure.shortcut_columns) + "."]
    lines += ["", f"The command's every flag: [`{command}`](../reference/cli.md#{_anchor(' '.join(command.split()[1:]))})."]
    return "\n".join(line for line in lines) + "\n"


def measures_index(measures) -> str:
    lines = ["# Measures", "",
             "One page per registered measure, generated from the measure registry "
             "(`bgbench.measures.registry.list_measures()`): its definition and the source it equals, "
             "how the tests check that, its headline and which direction is better, its options and its "
             "cost in forwards. A measure added to the registry gets its page here.", "",
             "| measure | what | command | headline (better) |", "|---|---|---|---|"]
    for m in measures:
        head = ", ".join(f"`{h.metric}{f'[{h.variant}]' if h.variant else ''}` "
                         f"({'higher' if h.higher_is_better else 'lower'})" for h in m.headlines) or "a table"
        lines.append(f"| [{m.name}]({m.name}.md) | {_cell(m.title or m.help)} | `{command_of(m)}` | {head} |")
    lines += ["", "What the variants and the headline numbers mean: [the concepts](../concepts/measures.md)."]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The API reference, the benchmarks and the changelog


def api_page() -> str:
    import bgbench
    lines = ["# Python API", "",
             "Every job is one plain function of `import bgbench` (its `__all__`); each computes and returns "
             "a result with its provenance and records nothing, and `bgbench.record(result, store)` writes it. "
             "The [Python API guide](python.md) shows them together; below, each "
             "function's own docstring.", ""]
    for name in bgbench.__all__:
        if name.startswith("__"):
            continue
        module = bgbench._EXPORTS[name]
        module = "bgbench" + module if module.startswith(".") else module
        lines += [f"::: {module}.{name}", ""]
    return "\n".join(lines)


def included(path: Path, title: str, intro: str) -> str:
    """A file of the repository as a page: its own text, read at build time (never copied into docs/)."""
    text = path.read_text()
    text = re.sub(r"\A# [^\n]*\n", "", text)  # the page has its own title
    return f"# {title}\n\n{intro}\n{text}"


# ---------------------------------------------------------------------------------------------
# The concept pictures, drawn from Synthetic-9 as bgbench writes it


def pictures() -> Dict[str, bytes]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from PIL import Image

    import bgbench
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        bgbench.build(tmp, preset="synthetic-9", per_class=1, size=64, split="val", seed=0, progress=False)
        root = Path(tmp)
        classes = sorted(p.name for p in (root / "original" / "val").iterdir())

        def image(variant, cls):
            return np.asarray(Image.open(next((root / variant / "val" / cls).iterdir())).convert("RGB"))

        def mask(cls):
            return np.load(next((root / "fg_mask" / "val" / cls).iterdir())).astype(bool)

        cls = classes[1]
        fig, axes = plt.subplots(1, len(VARIANTS), figsize=(len(VARIANTS) * 1.35, 1.8))
        for ax, v in zip(axes, VARIANTS):
            ax.imshow(image(v, cls), interpolation="nearest")
            ax.set_title(v.upper().replace("_", "-"), fontsize=8)
            ax.axis("off")
        out["variants.png"] = _png(fig)

        fg, m = image("original", cls), mask(cls)[..., None]
        others = [c for c in classes if c != cls][:5]
        fig, axes = plt.subplots(2, len(others) + 1, figsize=((len(others) + 1) * 1.4, 3.2))
        axes[0, 0].imshow(fg, interpolation="nearest")
        axes[0, 0].set_title("foreground F", fontsize=8)
        axes[1, 0].imshow(m[..., 0], cmap="gray", interpolation="nearest")
        axes[1, 0].set_title("mask m", fontsize=8)
        for k, c in enumerate(others, 1):
            bg = image("only_bg_t", c)
            axes[0, k].imshow(bg, interpolation="nearest")
            axes[0, k].set_title(f"background of {c[3:]}", fontsize=8)
            axes[1, k].imshow((bg * (1 - m) + fg * m).astype(np.uint8), interpolation="nearest")
            axes[1, k].set_title("B·(1−m) + F·m", fontsize=8)
        for ax in axes.flat:
            ax.axis("off")
        out["challenge.png"] = _png(fig)

        fig, axes = plt.subplots(2, len(classes), figsize=(len(classes) * 1.2, 2.8))
        for k, c in enumerate(classes):
            for row, v in enumerate(("mixed_same", "mixed_rand")):
                axes[row, k].imshow(image(v, c), interpolation="nearest")
                axes[row, k].axis("off")
            axes[0, k].set_title(c, fontsize=7)
        axes[0, 0].text(-8, 32, "MIXED-SAME", rotation=90, va="center", ha="right", fontsize=8)
        axes[1, 0].text(-8, 32, "MIXED-RAND", rotation=90, va="center", ha="right", fontsize=8)
        out["bg_gap.png"] = _png(fig)
    return out


def _png(fig) -> bytes:
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------


def pages() -> Dict[str, Callable[[], object]]:
    """Every generated page: its path under docs/ -> what writes it (text or bytes)."""
    from bgbench.measures.registry import list_measures
    measures = list_measures()
    out: Dict[str, Callable[[], object]] = {
        "reference/cli.md": cli_page,
        "reference/api.md": api_page,
        "measures/index.md": lambda: measures_index(measures),
        "benchmarks.md": lambda: included(
            ROOT / "benchmarks" / "README.md", "Benchmarks",
            "What bgbench's jobs cost, measured; read from `benchmarks/README.md` at build time (the scripts "
            "beside it rerun every table).\n"),
        "changelog.md": lambda: included(ROOT / "CHANGELOG.md", "Changelog",
                                         "Read from `CHANGELOG.md` at build time.\n"),
        "contributing.md": lambda: included(ROOT / "CONTRIBUTING.md", "Contributing",
                                            "Read from `CONTRIBUTING.md` at build time.\n").replace(
            "](docs/architecture.md)", "](architecture.md)"),
    }
    for m in measures:
        out[f"measures/{m.name}.md"] = (lambda m=m: measure_page(m))
    return out


def write_all(write: Callable[[str, object], None]) -> None:
    # docs/architecture.md links the repository's CONTRIBUTING.md, which the site holds as contributing.md
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    write("architecture.md", architecture.replace("](../CONTRIBUTING.md)", "](contributing.md)"))
    for path, make in pages().items():
        write(path, make())
    for name, data in pictures().items():
        write(f"concepts/img/{name}", data)


def _gen_files_writer(path: str, content) -> None:
    import mkdocs_gen_files
    with mkdocs_gen_files.open(path, "wb" if isinstance(content, bytes) else "w") as f:
        f.write(content)


def _folder_writer(out: Path):
    def write(path: str, content) -> None:
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        (target.write_bytes if isinstance(content, bytes) else target.write_text)(content)
    return write


if __name__ == "__main__":
    write_all(_folder_writer(Path(sys.argv[1])))
else:  # run by mkdocs-gen-files
    sys.path.insert(0, str(ROOT / "src"))
    write_all(_gen_files_writer)
