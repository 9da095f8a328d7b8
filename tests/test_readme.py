"""Every README and manual (docs/) claim about the command line is true.

Two halves:
- the README's usage lines agree with the parser: every flag exists, flags shown without brackets
  are required and bracketed ones optional, and a bracketed default (`[--trials 3]`) is the default;
- every README command that runs offline is run on tiny generated data (`COMMANDS` realizes each
  one; a README command without a realization fails `test_every_readme_command_has_a_realization`),
  and every subcommand's `--json` output passes a strict JSON parser.
"""
import functools
import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from bgbench.cli import build_parser
from conftest import run_cli

README = Path(__file__).resolve().parents[1] / "README.md"
#: The manual's hand-written pages (the generated ones are checked in test_docs.py).
DOCS = sorted((README.parent / "docs").rglob("*.md"))


def manual_text() -> str:
    """The README and every page of docs/, one after another: their commands are held to one standard."""
    return "\n".join(p.read_text() for p in [README, *DOCS])


# ---------------------------------------------------------------------------------------------
# The README's command lines


def readme_commands():
    """(text, tokens) of every `bgbench` command in the README's ```bash blocks: continuation lines
    joined, comments dropped; `torchrun ... -m bgbench` lines keep what follows `-m bgbench`."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", manual_text(), re.S):
        current = None
        for line in block.splitlines():
            code = re.split(r"\s#", line)[0].rstrip()
            code = code[:-1].rstrip() if code.endswith("\\") else code  # a continuation's backslash
            if re.match(r"\s", line) and current is not None and code.strip():
                current.append(code.strip())
                continue
            if current:
                out.append(" ".join(current))
            current = [code] if code.startswith(("bgbench ", "torchrun ")) else None
        if current:
            out.append(" ".join(current))
    return [(text, shlex.split(text.split("-m bgbench", 1)[-1] if text.startswith("torchrun") else
                               text.split("bgbench", 1)[1])) for text in out]


def inline_commands():
    """`bgbench ...` commands quoted inline in the README's prose (`bgbench models 'timm:resnet*'`)."""
    spans = re.findall(r"`(bgbench [^`]+)`", manual_text())
    return [(s, shlex.split(s.split("bgbench", 1)[1])) for s in spans]


def _subparsers(parser):
    for action in parser._actions:
        if action.__class__.__name__ == "_SubParsersAction":
            return action.choices
    return None


def resolve(tokens):
    """(subparser, path, remaining tokens) for `tokens` after `bgbench`."""
    parser, path = build_parser(), []
    while tokens and _subparsers(parser) and tokens[0] in _subparsers(parser):
        parser = _subparsers(parser)[tokens[0]]
        path.append(tokens[0])
        tokens = tokens[1:]
    return parser, path, tokens


def flags_with_depth(tokens):
    """[(flag, bracket depth, values up to the next flag or bracket)] of a usage line."""
    found, depth = [], 0
    for tok in tokens:
        opens, closes = tok.count("["), tok.count("]")
        word = tok.strip("[]")
        depth += opens
        if word.startswith("--"):
            found.append([word, depth, []])
        elif found and word and word not in ("|", "...") and opens == 0 and found[-1][1] == depth:
            found[-1][2].append(word)
        depth -= closes
    return [tuple(f) for f in found]


def option_actions(parser):
    return {s: a for a in parser._actions for s in a.option_strings}


def leaf_commands(parser=None, path=()):
    parser = parser or build_parser()
    subs = _subparsers(parser)
    if not subs:
        return [" ".join(path)]
    return [c for name, p in subs.items() for c in leaf_commands(p, (*path, name))]


#: Optional flags that one mode of a command requires, shown as required on that mode's usage line:
#: `train --recipe dfr|linear-probe` needs the model whose last layer it refits (checked in cli/train.py).
MODE_REQUIRED = {("train", "--recipe"), ("train", "--model")}


def test_readme_usage_lines_match_the_parser():
    commands = readme_commands()
    assert len(commands) >= 15  # the extraction can fail
    problems = []
    for text, tokens in commands:
        parser, path, rest = resolve(tokens)
        if not path or _subparsers(parser):
            problems.append(f"{text}: no such subcommand")
            continue
        actions = option_actions(parser)
        synopsis = "[" in text
        shown = set()
        for flag, depth, values in flags_with_depth(rest):
            shown.add(flag)
            action = actions.get(flag)
            if action is None:
                problems.append(f"{text}: `bgbench {' '.join(path)}` has no {flag}")
                continue
            if synopsis and depth == 0 and not action.required and action not in one_of_required(parser) and \
                    (" ".join(path), flag) not in MODE_REQUIRED:
                problems.append(f"{text}: {flag} is shown as required but is optional")
            if depth > 0 and action.required:
                problems.append(f"{text}: {flag} is shown as optional but is required")
            literal = [v for v in values if not re.fullmatch(r"[A-Z_]+|.*\|.*", v)]
            if synopsis and depth > 0 and literal and literal == values and action.default is not None:
                default = action.default if isinstance(action.default, (list, tuple)) else [action.default]
                if [str(v) for v in default] != literal and [float(v) for v in default if
                                                             isinstance(v, (int, float))] != _floats(literal):
                    problems.append(f"{text}: {flag} {' '.join(literal)} is not the default ({action.default})")
        if synopsis:
            for flag, action in actions.items():
                if action.required and flag.startswith("--") and flag not in shown:
                    problems.append(f"{text}: required {flag} is missing")
    assert not problems, "\n".join(problems)


def one_of_required(parser):
    """Actions of the parser's required mutually exclusive groups (`eval`: --model or --predictions):
    each is shown without brackets in the usage line of its own form."""
    return [a for g in parser._mutually_exclusive_groups if g.required for a in g._group_actions]


def _floats(values):
    try:
        return [float(v) for v in values]
    except ValueError:
        return None


def test_inline_readme_commands_name_real_flags():
    problems = []
    spans = inline_commands()
    assert any("models 'timm:resnet*'" in s for s, _ in spans)
    for text, tokens in spans:
        parser, path, rest = resolve(tokens)
        if not path or _subparsers(parser):
            continue  # `bgbench analyze ...`: a family of commands, not one
        actions = option_actions(parser)
        problems += [f"{text}: no {tok.strip('[]')}" for tok in rest
                     if tok.strip("[]").startswith("--") and tok.strip("[]") not in actions]
    assert not problems, "\n".join(problems)


def test_every_subcommand_has_json_and_shared_flags_are_defined_once():
    parser = build_parser()
    missing = []
    for cmd in leaf_commands(parser):
        sub, _, _ = resolve(cmd.split())
        if "--json" not in option_actions(sub):
            missing.append(cmd)
    assert not missing, f"no --json: {missing}"
    cli = Path(__file__).resolve().parents[1] / "src" / "bgbench" / "cli"
    shared = ("--model", "--checkpoint", "--trust-checkpoint", "--norm", "--device", "--batch-size", "--db", "--json",
              "--quiet")
    for path in cli.glob("*.py"):
        if path.name == "arguments.py":  # the one place shared flags are added
            continue
        for flag in shared:
            assert f'add_argument("{flag}"' not in path.read_text(), f"{path.name} defines {flag} itself"


# ---------------------------------------------------------------------------------------------
# Running the README's commands


def strict_json(text):
    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


#: How each README command is realized on tiny data: README text -> argv template. Placeholders in
#: braces come from the scenario (`{data}`, `{db}`, `{ckpt}`, run ids ...). None: not run here, why.
COMMANDS = {
    "bgbench study STUDY.toml": "study {tmp}/study.toml --db {db} --json --quiet",
    "bgbench profile --model M --data ROOT": "profile --model {model} --data {data} --out {tmp}/profile --db {db} "
                                             "--json --quiet",
    # real weights and data (ResNet-50, IN-9, Waterbirds): run with stand-ins (STAND_IN_KEYS)
    "bgbench profile --model timm:resnet50.a1_in1k": None,
    "bgbench study study.toml": None,
    # a cluster's lines (Slurm, an array task's shard): parsed only; test_cluster.py runs them on submitit's
    # local executor and as shards
    "bgbench study study.toml --executor slurm": None,
    "bgbench study study.toml --shard $SLURM_ARRAY_TASK_ID/8": None,
    "bgbench eval --model M [--checkpoint C] --data ROOT": "eval --model timm:test_resnet --checkpoint {state_dict} "
                                                           "--data {data} --json --db {db} --quiet",
    "bgbench edit --data ROOT --out DIR": "edit --data {data} --out {tmp}/edit --levels size_full --model {model} "
                                          "--norm in9 --json --db {db} --quiet",
    "bgbench eval --model M --data DIR": "eval --model {model} --data {tmp}/edit --json --db {db} --quiet",
    "bgbench analyze edits RUN": "analyze edits {edit_eval} --bootstrap 200 --json --db {db}",
    # OpenAI's 2 GB guided-diffusion weights: tests/measures/test_edit_diffusion.py runs the line with a tiny ADM
    "bgbench edit --backend diffusion --weights 256x256_diffusion_uncond.pt": None,
    "bgbench edit --plugin my_backends": "edit --plugin my_backends --inpainter lama --complexity-editor diffusion "
                                         "--data {data} --out {tmp}/edit2 --levels remove complexity_20 --json "
                                         "--db {db} --quiet",
    "bgbench analyze categories RUN": "analyze categories {eval} --mapping argmax --json --db {db}",
    "bgbench analyze boxsize RUN": "analyze boxsize {eval} --bins 2 --json --db {db}",
    "bgbench analyze leakage RUN": "analyze leakage {eval} --json --db {db}",
    "bgbench analyze groups RUN": "analyze groups {eval} --min-images 1 --json --db {db}",
    "bgbench compare RUN_A RUN_B": "compare {eval} {eval_random} --json --db {db}",
    "bgbench probe noise --model M --data ROOT": "probe noise --model {model} --data {data} --levels 0.25 --trials 1 "
                                                 "--json --db {db} --quiet",
    "bgbench probe saliency --model M --data ROOT": "probe saliency --model {model} --data {data} --examples 2 "
                                                    "--out {tmp}/saliency --json --db {db} --quiet",
    "bgbench probe features --model M --data ROOT": "probe features --model {model} --data {data} --top-features 2 "
                                                    "--top-images 2 --out {tmp}/features --json --db {db} --quiet",
    "bgbench probe ablate --model M --data ROOT": "probe ablate --model {model} --data {data} --seed 1 --json "
                                                  "--db {db} --quiet",
    "bgbench probe attribution --model M --data ROOT": "probe attribution --model {model} --data {data} --top 2 "
                                                       "--json --db {db} --quiet",
    # the shortcut measures on ImageNet-style trees the test writes, with a 1000-class timm tag from a
    # Hugging Face cache the test writes (offline)
    "bgbench eval --model M --imagenet ROOT": "eval --model {imodel} --imagenet {imagenet} --json --db {db} --quiet",
    "bgbench probe watermark --model M": "probe watermark --model {imodel} --data {imagenet} --json --db {db} --quiet",
    "bgbench probe texture --model M": "probe texture --model {imodel} --data {imagenet} --stylized {sin} --json "
                                       "--db {db} --quiet",
    "bgbench probe renditions --model M": "probe renditions --model {imodel} --data {imagenet} --renditions {inr} "
                                          "--json --db {db} --quiet",
    # Spurious ImageNet's features of two of the val's classes (tests/helpers/spurious_imagenet_tree.py)
    "bgbench probe spurious_imagenet --model timm:resnet50.a1_in1k --data /data/spurious_imagenet":
        "probe spurious_imagenet --model {imodel} --data {spurious} --imagenet {imagenet} --json --db {db} --quiet",
    # Salient ImageNet's masks over its own generated ImageNet train (tests/helpers/salient_imagenet_tree.py)
    "bgbench probe salient_imagenet --model timm:resnet50.a1_in1k --data /data/salient_imagenet_dataset":
        "probe salient_imagenet --model {imodel} --data {salient} --imagenet {salient_imagenet} --annotations "
        "{salient_annotations} --json --db {db} --quiet",
    "bgbench probe imagenet_x --model M": "probe imagenet_x --model {imodel} --data {imagenet} --json --db {db} "
                                          "--quiet",
    "bgbench probe in9_gap --model M": "probe in9_gap --model {model} --data {data} --json --db {db} --quiet",
    "bgbench analyze shortcuts": "analyze shortcuts --json --db {db}",
    "bgbench synth --out DIR": "synth --out {tmp}/s9 --size 32 --per-class 2 --split val --seed 1 "
                               "--bg-correlation 0.9 --json --quiet",
    "bgbench train --data ROOT --out DIR": "train --data {data} --out {tmp}/run --model timm:test_resnet --epochs 1 "
                                           "--json --db {db} --quiet",
    "bgbench train --recipe dfr|linear-probe --model M": "train --recipe dfr --model {model} --data {data} --out "
                                                        "{tmp}/dfr --retrains 2 --feature-cache {tmp}/features "
                                                        "--json --db {db} --quiet",
    "bgbench build --images DIR [--boxes PATH]": "build --images {images} --boxes {boxes} --out {tmp}/built "
                                               "--no-resize --json --db {db} --quiet",
    "bgbench build --images /data/imgs --boxes /data/xml --out": "build --images {images} --boxes {boxes} --out "
                                                               "{tmp}/shard0 --no-resize --shard 0/1 --json --quiet",
    "bgbench merge /data/in9-built": "merge {tmp}/merged {tmp}/shard0 --json --db {db} --quiet",
    "bgbench merge OUT SHARD_DIR": None,  # the usage line: its flags are checked against the parser above
    # a GPU node's model job under sbatch: torchrun's sharding is tested in test_challenge.py
    "torchrun --standalone --nproc-per-node 4 -m bgbench challenge": None,
    # ImageNet itself is not here: tests/test_imagenet_build.py runs these on generated ImageNet trees
    "bgbench build --imagenet ROOT [--preset": None,
    "bgbench build --imagenet /data/imagenet": None,
    "bgbench merge /data/in9 /scratch/in9-train": None,
    "bgbench merge /data/in9-edits": None,  # edit shards and their merge: test_writer.py
    "bgbench challenge --model M [--checkpoint C] --data ROOT": "challenge --model {model} --data {data} --sample 6 "
                                                                "--seed 5 --json --db {db} --quiet",
    "bgbench challenge --model M --data ROOT": None,  # torchrun: sharding is tested in test_challenge.py
    "bgbench predict --model M PATH": "predict --model {model} {data}/original/val/00_circle --top 3 --json",
    "bgbench leaderboard": "leaderboard --json --db {db}",
    "bgbench report": "report --db {db} --out {tmp}/report --json --quiet",
    "bgbench runs": "runs --json --db {db}",
    "bgbench cache": "cache --json",
    "bgbench merge-stores results.db": "merge-stores {tmp}/merged-store.db {db} --json",
    "bgbench export RUN --out FILE.csv": "export {eval} --out {tmp}/closed.csv --json --db {db}",
    "bgbench export --scorecard --out DIR": "export --scorecard --out {tmp}/published --json --db {db}",
    "bgbench eval --predictions my_api_model.csv --data /data/bg_challenge": "eval --predictions {tmp}/closed.csv "
                                                                            "--data {data} --json --db {db} --quiet",
    # the README's foundation models and DFR on real weights and data: run with stand-ins (STAND_IN_KEYS)
    "bgbench train --recipe dfr --model timm:resnet50.a1_in1k": None,
    "bgbench eval --model file:dfr-resnet50/model.pt": None,
    "bgbench eval --model file:dfr-spawrious/model.pt": None,  # ImageNet-D and Spawrious: generated trees
    # Hard ImageNet's masks over your ImageNet: these probes run on generated trees in test_benchmarks.py's study
    "bgbench probe noise --model timm:resnet50 --data hardImageNet/": None,
    "bgbench probe saliency --model timm:resnet50 --data hardImageNet/": None,
    "bgbench probe ablate --model timm:resnet50 --data hardImageNet/": None,
    "bgbench train --recipe dfr --model openclip:ViT-B-32@openai": None,
    "bgbench eval --model openclip:ViT-B-32@openai": None,
    "bgbench challenge --model openclip:ViT-B-32@openai": None,
    "bgbench eval --model hf:facebook/dinov2-base-imagenet1k-1-layer": None,
    "bgbench challenge --model hf:facebook/dinov2-base-imagenet1k-1-layer": None,
    "bgbench eval --model hf:facebook/convnext-base-224": None,
    "bgbench challenge --model hf:facebook/convnext-base-224": None,
    # the manual's own lines on real weights: the protocol's pair runs with stand-ins; a photo of yours
    # and a GPU's flags are parsed only (test_readme_usage_lines_match_the_parser, test_docs.py)
    "bgbench eval --model timm:resnet50.a1_in1k": None,
    "bgbench challenge --model timm:resnet50.a1_in1k": None,
    "bgbench predict --model timm:resnet50.a1_in1k": None,
    "bgbench eval --model timm:resnet50.a1_in1k --data /data/in9 --device cuda": None,
    "bgbench challenge --model timm:resnet50.a1_in1k --data /data/in9 --device cuda": None,
}
#: README commands that name real models and real data: run with stand-ins (`test_readme_commands_that_name_real_
#: models_run_with_stand_ins`), so that a first command such as `profile --model timm:resnet50.a1_in1k` can never fail
STAND_IN_KEYS = ("bgbench profile --model timm:resnet50.a1_in1k", "bgbench study study.toml",
                 "bgbench train --recipe dfr --model timm:resnet50.a1_in1k", "bgbench eval --model file:dfr-resnet50/model.pt",
                 "bgbench train --recipe dfr --model openclip:ViT-B-32@openai", "bgbench eval --model openclip:ViT-B-32@openai",
                 "bgbench challenge --model openclip:ViT-B-32@openai",
                 "bgbench eval --model hf:facebook/dinov2-base-imagenet1k-1-layer",
                 "bgbench challenge --model hf:facebook/dinov2-base-imagenet1k-1-layer",
                 "bgbench eval --model hf:facebook/convnext-base-224", "bgbench challenge --model hf:facebook/convnext-base-224",
                 "bgbench eval --model timm:resnet50.a1_in1k", "bgbench challenge --model timm:resnet50.a1_in1k",
                 "bgbench eval --model file:dfr-spawrious/model.pt")
#: Commands the README names in its prose, run as well (they complete the --json coverage).
PROSE = ["models 'timm:test_res*' --json", "leaderboard --format html --out {tmp}/leaderboard.html --db {db}",
         "leaderboard --format csv --db {db}", "demo --out {tmp}/demo --json --quiet"]


def realization(text):
    """The COMMANDS key a README command falls under (the longest matching prefix)."""
    keys = [k for k in COMMANDS if text.replace("torchrun --nproc-per-node K -m ", "").startswith(k)]
    return max(keys, key=len) if keys else None


def test_every_readme_command_has_a_realization():
    texts = [t for t, _ in readme_commands()]
    unmatched = [t for t in texts if realization(t) is None]
    assert not unmatched, f"README commands without a realization in COMMANDS: {unmatched}"
    unused = set(COMMANDS) - {realization(t) for t in texts}
    assert not unused, f"COMMANDS entries the README no longer has: {unused}"


def _my_backends(folder: Path) -> None:
    (folder / "my_backends.py").write_text(
        "from bgbench.edits import register_inpainter, register_complexity_editor\n"
        "@register_inpainter('lama')\n"
        "def lama(image, mask):\n    out = image.copy()\n    out[mask] = 0\n    return out\n"
        "@register_complexity_editor('diffusion')\n"
        "def guided(image, mask, lam):\n    return 255 - image\n")


def _imagenet_trees(root: Path, monkeypatch) -> dict:
    """ImageNet's val (real file names), its stylized copy, ImageNet-R-style folders, and the timm tag's
    weights in an offline Hugging Face cache: what the shortcut commands read."""
    from helpers import imagenet_val
    from helpers.hub_cache import TAG, use_offline_hub, write_timm_weights
    imagenet_val.write_val(root / "val", per_class=3)
    imagenet_val.write_class_folders(root / "r", per_class=2)
    imagenet_val.write_stylized(root / "sin", root / "val")
    write_timm_weights(root / "hf")
    use_offline_hub(monkeypatch, root / "hf")
    from helpers.spurious_imagenet_tree import write_release
    from helpers.salient_imagenet_tree import write_tree
    spurious = write_release(root / "spurious", ((207, 0, 2), (478, 4, 2)))
    salient, salient_imagenet, annotations = write_tree(root / "salient")
    return {"imagenet": root / "val", "sin": root / "sin", "inr": root / "r", "imodel": f"timm:{TAG}",
            "spurious": spurious, "salient": salient, "salient_imagenet": salient_imagenet,
            "salient_annotations": annotations}


def _build_inputs(root: Path):
    from bgbench.data.synthetic import generate
    from test_build import write_synth
    write_synth(root, generate(2, size=64, seed=0))
    return root / "images", root / "boxes"


def _small_demo(monkeypatch):
    import bgbench.demo
    monkeypatch.setattr(bgbench.demo, "run_demo", functools.partial(
        bgbench.demo.run_demo, per_class=6, test_per_class=2, size=32, epochs=1))


def test_readme_commands_run_and_every_json_is_strict(synth_root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # `--plugin my_backends` finds ./my_backends.py
    _my_backends(tmp_path)
    _small_demo(monkeypatch)
    images, boxes = _build_inputs(tmp_path / "inputs")
    (tmp_path / "study.toml").write_text(f'models = ["timm:test_resnet"]\ndatasets = ["{synth_root}"]\n'
                                         f'[measures.eval]\n[report]\nout = "{tmp_path / "study-report"}"\n')
    import timm
    import torch
    torch.save(timm.create_model("test_resnet", num_classes=9).state_dict(), tmp_path / "sd.pt")
    ctx = {"data": synth_root, "db": tmp_path / "r.db", "tmp": tmp_path, "images": images, "boxes": boxes,
           "state_dict": tmp_path / "sd.pt", **_imagenet_trees(tmp_path / "imagenet", monkeypatch)}
    order = ["bgbench synth --out DIR", "bgbench train --data ROOT --out DIR",
             "bgbench train --recipe dfr|linear-probe --model M", "bgbench study STUDY.toml",
             "bgbench profile --model M --data ROOT", "bgbench eval --model M [--checkpoint C]"
             " --data ROOT", "bgbench compare RUN_A RUN_B", "bgbench analyze categories RUN",
             "bgbench analyze boxsize RUN", "bgbench analyze leakage RUN", "bgbench analyze groups RUN",
             "bgbench probe noise --model M --data ROOT",
             "bgbench probe saliency --model M --data ROOT", "bgbench probe features --model M --data ROOT",
             "bgbench probe ablate --model M --data ROOT", "bgbench probe attribution --model M --data ROOT",
             "bgbench eval --model M --imagenet ROOT", "bgbench probe watermark --model M",
             "bgbench probe texture --model M", "bgbench probe renditions --model M",
             "bgbench probe imagenet_x --model M", "bgbench probe in9_gap --model M", "bgbench analyze shortcuts",
             "bgbench probe spurious_imagenet --model timm:resnet50.a1_in1k --data /data/spurious_imagenet",
             "bgbench probe salient_imagenet --model timm:resnet50.a1_in1k --data /data/salient_imagenet_dataset",
             "bgbench edit --data ROOT --out DIR",
             "bgbench eval --model M --data DIR", "bgbench analyze edits RUN", "bgbench edit --plugin my_backends",
             "bgbench build --images DIR [--boxes PATH]", "bgbench build --images /data/imgs --boxes /data/xml --out",
             "bgbench merge /data/in9-built", "bgbench challenge --model M [--checkpoint C] --data ROOT",
             "bgbench export RUN --out FILE.csv", "bgbench eval --predictions my_api_model.csv --data /data/bg_challenge",
             "bgbench predict --model M PATH",
             "bgbench leaderboard", "bgbench runs", "bgbench report", "bgbench export --scorecard --out DIR",
             "bgbench cache", "bgbench merge-stores results.db"]
    assert sorted(order) == sorted(k for k, v in COMMANDS.items() if v is not None)
    with_json = set()
    documents = {}
    for key in order + PROSE:
        template = COMMANDS.get(key, key)
        if key == "bgbench compare RUN_A RUN_B":  # a second eval run to compare with (random init)
            proc = run_cli("eval", "--model", "timm:test_resnet", "--data", synth_root, "--db", ctx["db"], "--quiet",
                           "--json")
            ctx["eval_random"] = strict_json(proc.stdout)["run_id"]
        argv = shlex.split(template.format(**ctx))
        proc = run_cli(*argv)
        assert proc.returncode == 0, f"{key}: {proc.stderr}"
        assert "Traceback" not in proc.stderr
        if "--json" in argv:
            doc = strict_json(proc.stdout)  # one strict document and nothing else on stdout
            _, path, _ = resolve(argv)
            with_json.add(" ".join(path))
            documents[key] = doc
        if key == "bgbench train --data ROOT --out DIR":
            ctx["model"] = f"file:{tmp_path / 'run' / 'model.pt'}"
        if key.startswith("bgbench eval --model M [--checkpoint C]"):
            ctx["eval"] = documents[key]["run_id"]
            ctx["eval"], ctx["sd_eval"] = _eval_of_trained_model(ctx), ctx["eval"]
        if key == "bgbench eval --model M --data DIR":
            ctx["edit_eval"] = documents[key]["run_id"]
    assert with_json == set(leaf_commands()), f"--json not exercised for {set(leaf_commands()) - with_json}"
    _check_claims(ctx, documents, tmp_path)


def _eval_of_trained_model(ctx):
    """The README's eval line ran on a state_dict checkpoint; the analyses want the trained model too."""
    proc = run_cli("eval", "--model", ctx["model"], "--data", ctx["data"], "--db", ctx["db"], "--quiet", "--json")
    assert proc.returncode == 0, proc.stderr
    return strict_json(proc.stdout)["run_id"]


def _check_claims(ctx, docs, tmp_path):
    """The README's specific claims about what these commands wrote."""
    # synth writes SYNTHETIC9.json with the generator's parameters (README, data layout)
    meta = json.loads((tmp_path / "s9" / "SYNTHETIC9.json").read_text())["splits"]["val"]
    assert (meta["size"], meta["per_class"], meta["seed"], meta["bg_correlation"]) == (32, 2, 1, 0.9)
    # the challenge sample holds classes with no sampled foreground: their numbers are null
    chal = docs["bgbench challenge --model M [--checkpoint C] --data ROOT"]
    assert chal["estimate"] and chal["sample"]["n"] == 6
    assert any(row["n"] == 0 and row["clean"] is None for row in chal["per_class"])
    # the plugin's backends made the edits (README: --plugin my_backends, a module in the current folder)
    plugin = docs["bgbench edit --plugin my_backends"]
    assert {lv["level"] for lv in plugin["levels"]} >= {"remove", "complexity_20"}
    # every run kind has a headline in `bgbench runs`
    listing = docs["bgbench runs"]
    blank = [(r["id"], r["kind"]) for r in listing if not r["result"]]
    assert not blank, f"runs without a headline: {blank}"
    # the report defaults: --out given here; the listing and report name models with their weights
    labels = {r["model_label"] for r in listing if r["model"] == "timm:test_resnet"}
    assert any("random init, seed 0" in lb for lb in labels) and any("sha256" in lb for lb in labels)
    # the demo ran small (patched) and its JSON is its summary
    demo = docs["demo --out {tmp}/demo --json --quiet"]
    assert set(demo["models"]) == {"original", "mixed_rand"}
    assert np.isfinite(demo["models"]["original"]["bg_gap"]["value"])


# ---------------------------------------------------------------------------------------------
# The README's commands that name real models: every one runs, offline, with a stand-in


def in9_named_copy(src: Path, dst: Path) -> Path:
    """A copy of a Synthetic-9 tree whose class folders carry IN-9's nine names (so a 1000-class
    model reads it through upstream's table, as it reads the IN-9 release)."""
    import shutil
    from bgbench.classes import IN9_FOLDERS
    shutil.copytree(src, dst)
    old = sorted(p.name for p in (dst / "original" / "val").iterdir())
    names = dict(zip(old, IN9_FOLDERS))
    for split_dir in [p for v in dst.iterdir() if v.is_dir() for p in v.iterdir() if p.is_dir()]:
        for folder in list(split_dir.iterdir()):
            if folder.name in names:
                folder.rename(split_dir / names[folder.name])
    for manifest in dst.glob("*.csv"):
        text = manifest.read_text()
        for a, b in names.items():
            text = text.replace(f"{a}/", f"{b}/").replace(f",{a},", f",{b},")
        manifest.write_text(text)
    return dst


@pytest.mark.slow  # every README line naming a hub model, with stand-ins: minutes; make test-all
def test_readme_commands_that_name_real_models_run_with_stand_ins(model_ckpt, tmp_path, monkeypatch):
    """timm:resnet50.a1_in1k is read from a Hugging Face cache written here (timm's tiny test_resnet
    tag stands in for it), open_clip and Hugging Face models are tiny ones saved here, the data are
    generated trees in the layouts the README names; the commands are the README's own lines."""
    from helpers.foundation_models import tiny_clip, tiny_vit
    from helpers.group_trees import waterbirds_tree
    from helpers.hub_cache import STAND_INS, use_offline_hub, write_timm_weights
    monkeypatch.chdir(tmp_path)
    write_timm_weights(tmp_path / "hf")
    use_offline_hub(monkeypatch, tmp_path / "hf")
    from bgbench.variants.synth import write_dataset
    small = tmp_path / "s9"  # one image a class: the README's lines cost seconds, not minutes
    write_dataset(small, per_class=1, size=32, seed=4, split="val", progress=False)
    write_dataset(small, per_class=4, size=32, seed=5, split="train", progress=False)  # DFR holds out a share
    in9 = in9_named_copy(small, tmp_path / "in9")
    other = tmp_path / "s9-other"  # a built IN-9 of its own images: a study refuses two datasets with the same
    write_dataset(other, per_class=1, size=32, seed=6, split="val", progress=False)
    built = in9_named_copy(other, tmp_path / "in9-built")
    birds = waterbirds_tree(tmp_path / "waterbirds", {"train": {(0, 0): 3, (1, 1): 3, (0, 1): 1, (1, 0): 1},
                                                      "val": {(y, p): 3 for y in (0, 1) for p in (0, 1)},
                                                      "test": {(y, p): 2 for y in (0, 1) for p in (0, 1)}})
    from helpers.benchmark_trees import imagenet_d_tree, spawrious_tree
    imagenet_d = imagenet_d_tree(tmp_path / "ImageNet-D", {"background": 1, "texture": 1, "material": 1})
    spawrious = spawrious_tree(tmp_path / "spawrious", per_folder=2, size=16)
    swaps = {**STAND_INS, "/data/ImageNet-D": str(imagenet_d), "/data/spawrious": str(spawrious), "openclip:ViT-B-32@openai": f"openclip:{tiny_clip(tmp_path / 'clip')}",
             "hf:facebook/dinov2-base-imagenet1k-1-layer": f"hf:{tiny_vit(tmp_path / 'vit')}",
             "hf:facebook/convnext-base-224": f"hf:{tmp_path / 'vit'}",
             "file:runs/mixed_rand/model.pt": f"file:{model_ckpt}", "/data/in9-built": str(built), "/data/in9": str(in9),
             "/data/bg_challenge": str(in9), "/data/waterbirds": str(birds), "--device cuda": "--device cpu"}

    def swapped(text: str) -> str:
        for a, b in swaps.items():
            text = text.replace(a, b)
        return text
    block = re.search(r"```toml\n(# study.toml\n.*?)```", manual_text(), re.S).group(1)
    (tmp_path / "study.toml").write_text(swapped(block))
    texts = [t for t, _ in readme_commands() if realization(t) in STAND_IN_KEYS]
    assert {realization(t) for t in texts} == set(STAND_IN_KEYS)
    db = tmp_path / "r.db"
    for text in texts:
        argv = shlex.split(swapped(text).split("bgbench", 1)[1])
        argv = [a for a in argv if a not in ("--dry-run",)] + ["--db", str(db), "--quiet"]
        proc = run_cli(*argv)
        assert proc.returncode == 0, f"{text}: {proc.stderr[-2000:]}"
        assert "Traceback" not in proc.stderr
    # the first command read the cached tag's weights, and profiled it
    from bgbench.store import Store
    with Store(db) as store:
        tagged = [r for r in store.runs("eval") if r["model"] == "timm:test_resnet.r160_in1k"]
    assert tagged and json.loads(tagged[0]["spec"])["extra"]["pretrained"]["tag"] == "test_resnet.r160_in1k"
