"""The leaderboard: measured rows ranked within one dataset (data fingerprint), published rows
beside IN-9 runs only."""
import csv
import io
import json

from bgbench.classes import IN9_FOLDERS
from bgbench.reporting.leaderboard import PUBLISHED, leaderboard, render
from bgbench.store import Store
from conftest import run_cli

SYNTH = ["00_circle", "01_square"]


def _metric(store, run_id, name, value, variant=""):
    """One stored metric (without interval), as `recording.record` writes a result's."""
    store.insert("metrics", run_id, [(name, variant, value, None, None, None)])


def _add(store, model, sha, challenge=None, clean=None, accs=None, gap=None, root="/data", fp="fp-in9",
         classes=IN9_FOLDERS):
    spec = {"checkpoint_sha256": sha}
    config = {"x": 1, "classes": list(classes)}
    if accs is not None:
        rid = store.start_run("eval", config, model=model, spec=spec, data_root=root, data_fingerprint=fp)
        for v, a in accs.items():
            _metric(store, rid, "accuracy", a, variant=v)
        _metric(store, rid, "bg_gap", gap)
        store.finish_run(rid)
    if challenge is not None:
        rid = store.start_run("challenge", config, model=model, spec=spec, data_root=root, data_fingerprint=fp)
        _metric(store, rid, "challenge_accuracy", challenge)
        _metric(store, rid, "clean_accuracy", clean)
        store.finish_run(rid)


def test_ranking_provenance_and_reported_rows(tmp_path):
    with Store(tmp_path / "r.db") as store:
        _add(store, "timm:a", "a" * 64, challenge=0.30, clean=0.9,
             accs={"original": 0.9, "mixed_same": 0.8, "mixed_rand": 0.7}, gap=0.1)
        _add(store, "timm:b", "b" * 64, challenge=0.05, clean=0.95)
        unfinished = store.start_run("challenge", {}, model="timm:c", spec={"checkpoint_sha256": "c"},
                                     data_root="/data", data_fingerprint="fp-in9")
        _metric(store, unfinished, "challenge_accuracy", 0.99)
        rows = leaderboard(store)
    models = [r["model"] for r in rows]
    assert "timm:c" not in models  # unfinished runs never rank
    assert models.index("timm:a") < models.index("ResNet-50") < models.index("ResNet-50 (IN-9L)") < models.index("timm:b")
    a = rows[models.index("timm:a")]
    assert a["source"] == "measured" and a["checkpoint_sha256"] == "a" * 64 and a["version"]
    assert a["mixed_rand"] == 0.7 and a["bg_gap"] == 0.1 and a["challenge"] == 0.3  # eval and challenge joined
    r50 = rows[models.index("ResNet-50")]
    assert r50["source"] == "reported" and r50["challenge"] == 0.223 and r50["clean"] == 0.956
    # the challenge ranking, then apart the rows without a challenge, by MIXED-RAND (published:
    # ResNet-152 83.5%, VGG16-BN 73.4%, ResNet-50 (IN-9/Mixed-Rand) 71.3%)
    by_challenge = [(r["model"], r["rank_by_challenge"]) for r in rows if r["rank_by_challenge"] is not None]
    # published challenge accuracies: ResNet-50 22.3%, ViT-L/16 20.02%, IN-9L 12.0%, BiT-M R101x3 3.78%
    vit, bit = "ViT-L/16 (timm vit_large_patch16_224)", "BiT-M R101x3 (timm resnetv2_101x3_bitm)"
    assert by_challenge == [("timm:a", 1), ("ResNet-50", 2), (vit, 3), ("ResNet-50 (IN-9L)", 4), ("timm:b", 5),
                            (bit, 6)]
    by_mixed_rand = [(r["model"], r["rank_by_mixed_rand"]) for r in rows if r["rank_by_mixed_rand"] is not None]
    assert by_mixed_rand == [("ResNet-152", 1), ("VGG16-BN", 2), ("ResNet-50 (IN-9/Mixed-Rand)", 3)]
    assert all((r["rank_by_challenge"] is None) != (r["rank_by_mixed_rand"] is None) for r in rows)
    vgg = rows[models.index("VGG16-BN")]
    assert vgg["challenge"] is None and vgg["bg_gap"] == 0.102


def test_without_a_challenge_the_key_is_mixed_rand_never_original(tmp_path):
    """The demo's pair: the ORIGINAL-trained model leans on the background (original 99%, mixed_rand
    20%, BG-Gap 79%), the MIXED-RAND-trained one does not (60%, 61%, -1%). Ranked by original accuracy
    the first would win; by MIXED-RAND accuracy the second does. A model with a challenge run is
    ranked on its own key, and one with neither key is listed unranked."""
    with Store(tmp_path / "r.db") as store:
        _add(store, "trained-on-original", "o" * 64, accs={"original": 0.99, "mixed_same": 0.99, "mixed_rand": 0.20},
             gap=0.79, fp="fp-s", classes=SYNTH)
        _add(store, "trained-on-mixed-rand", "m" * 64, accs={"original": 0.60, "mixed_same": 0.60, "mixed_rand": 0.61},
             gap=-0.01, fp="fp-s", classes=SYNTH)
        _add(store, "challenged", "c" * 64, challenge=0.05, clean=0.5, fp="fp-s", classes=SYNTH)
        _add(store, "original-only", "x" * 64, accs={"original": 1.0}, gap=None, fp="fp-s", classes=SYNTH)
        rows = leaderboard(store, include_reported=False)
    got = [(r["model"], r["rank_by_challenge"], r["rank_by_mixed_rand"]) for r in rows]
    assert got == [("challenged", 1, None), ("trained-on-mixed-rand", None, 1), ("trained-on-original", None, 2),
                   ("original-only", None, None)]
    table = render(rows, "table")
    assert table.index("ranked by challenge accuracy") < table.index("challenged")
    assert table.index("ranked by MIXED-RAND accuracy") < table.index("trained-on-mixed-rand") \
        < table.index("trained-on-original") < table.index("not ranked") < table.index("original-only")


def test_datasets_are_ranked_apart_and_published_rows_join_in9_only(tmp_path):
    with Store(tmp_path / "r.db") as store:
        _add(store, "timm:in9", "a" * 64, challenge=0.20, clean=0.9)
        _add(store, "timm:synth", "b" * 64, challenge=0.50, clean=0.9, root="/synth", fp="fp-s", classes=SYNTH)
        _add(store, "timm:synth-copy", "c" * 64, challenge=0.40, clean=0.9, root="/elsewhere/synth", fp="fp-s",
             classes=SYNTH)
        rows = leaderboard(store)
    by_dataset = {}
    for r in rows:
        by_dataset.setdefault(r["dataset"], []).append(r)
    synth = next(v for k, v in by_dataset.items() if "fp-s" in k)
    assert [r["model"] for r in synth] == ["timm:synth", "timm:synth-copy"]  # one dataset despite two paths
    assert [r["rank_by_challenge"] for r in synth] == [1, 2] and all(r["source"] == "measured" for r in synth)
    in9 = next(v for k, v in by_dataset.items() if "fp-in9" in k)
    assert [r["model"] for r in in9][:3] == ["ResNet-50", "ViT-L/16 (timm vit_large_patch16_224)", "timm:in9"]
    assert PUBLISHED not in by_dataset  # the published rows sit beside the IN-9 run, not apart


def test_published_rows_stand_alone_without_an_in9_run(tmp_path):
    with Store(tmp_path / "r.db") as store:
        _add(store, "timm:synth", "b" * 64, challenge=0.50, clean=0.9, root="/synth", fp="fp-s", classes=SYNTH)
        rows = leaderboard(store)
    assert {r["dataset"] for r in rows if r["source"] == "reported"} == {PUBLISHED}
    assert next(r for r in rows if r["model"] == "timm:synth")["rank_by_challenge"] == 1


def test_formats_name_the_ranking_key_in_their_headers(tmp_path):
    from bgbench.reporting.render import leaderboard_html
    with Store(tmp_path / "r.db") as store:
        _add(store, "timm:a|pipe", "a" * 64, challenge=0.3, clean=0.9)
        rows = leaderboard(store)
    doc = json.loads(render(rows, "json"))
    assert doc[0]["model"] == "timm:a|pipe" and doc[0]["rank_by_challenge"] == 1 and "rank_by_mixed_rand" in doc[0]
    text = render(rows, "csv")
    header = text.splitlines()[0].split(",")
    assert "rank_by_challenge" in header and "rank_by_mixed_rand" in header and "rank" not in header
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert len(parsed) == len(rows)
    assert [r["model"] for r in parsed if r["rank_by_mixed_rand"]] == ["ResNet-152", "VGG16-BN",
                                                                       "ResNet-50 (IN-9/Mixed-Rand)"]
    md = render(rows, "md")
    body = [ln for ln in md.splitlines() if ln.startswith("| ") and not ln.startswith("| rank_by")]
    assert "timm:a\\|pipe" in md and len(body) == len(rows)
    assert "| rank_by_challenge | model |" in md and "| rank_by_mixed_rand | model |" in md
    assert "ranked by challenge accuracy" in md and "ranked by MIXED-RAND accuracy" in md
    table = render(rows, "table")
    assert "30.0%" in table and "rank_by_challenge" in table and "rank_by_mixed_rand" in table
    html = leaderboard_html(rows)
    assert "<th class=\"num\">rank by challenge accuracy</th>" in html
    assert "<th class=\"num\">rank by MIXED-RAND accuracy</th>" in html


def test_cli_leaderboard_only_measured(tmp_path):
    with Store(tmp_path / "r.db") as store:
        _add(store, "timm:a", "a" * 64, challenge=0.3, clean=0.9)
    proc = run_cli("leaderboard", "--db", tmp_path / "r.db", "--no-reported", "--format", "json")
    assert proc.returncode == 0
    rows = json.loads(proc.stdout)
    assert [r["model"] for r in rows] == ["timm:a"]
