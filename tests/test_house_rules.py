"""House rules a scan of the source can check: only the store package speaks SQL (every query is a
named `Store` method; tables come from `TableSchema` declarations)."""
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "bgbench"

SQL = re.compile(r"\.conn\b|\bexecute(many|script)?\(|\bsqlite3\b|"
                 r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE TABLE|ALTER TABLE|PRAGMA)\b")


def _lines(pattern: re.Pattern, skip=()):
    return [f"{p.relative_to(SRC)}:{n}: {line.strip()}" for p in sorted(SRC.rglob("*.py"))
            if p.relative_to(SRC).parts[0] not in skip
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]


def test_the_scan_finds_sql_where_there_is_some():
    assert len(_lines(SQL)) > 10  # the store itself: the pattern does match real queries


def test_no_sql_outside_the_store():
    assert _lines(SQL, skip=("store",)) == []


# ------------------------------------------------------------------------------------------------
# comments say why, never what the code used to do (the CHANGELOG keeps the history)

#: Phrases that narrate what the code, its files or its stores used to be.
HISTORY = [re.compile(p, re.IGNORECASE) for p in (
    r"\bused to be\b", r"\b(it|they|this|bgbench|we) used to\b", r"\bas (it|they) always (was|were|did)\b",
    r"\b(older|earlier|previous) (bgbench|versions?|schemas?|stores?|builds?|main|releases?|formats?)\b",
    r"\b(written|recorded|stored|saved|made|built) (by|with) an? (older|earlier|previous)\b",
    r"\b(written|recorded|stored|saved|made|built) before (v\d+|\w+ (existed|were|was|had))\b",
    r"\b(runs|stores|files|datasets|reports|entries|outputs|builds) (recorded|stored|written|made) before\b",
    r"\bbgbench \d+\.\d+(\.\d+)? (until|before|since)\b",
    r"\b(until|before|since) (January|February|March|April|May|June|July|August|September|October|November|"
    r"December) \d{4}\b",
    r"\bthe \w+ (it|they) replaced?s?\b", r"\bthat were public\b", r"\bstill resolves?\b",
    r"\b(is|are) still (read|accepted|supported)\b", r"\bcode keeps working\b", r"\bformerly\b", r"\bpreviously\b",
    r"\banymore\b", r"\bmigrat(e|es|ed|ing|ion|ions)\b", r"\bbackwards?[- ]compatib", r"\bfor compatibility\b",
    r"\bold (positional|calls?|stores?|runs?|boxes|manifests?|reports?|names?|schemas?|versions?|behaviou?r)\b",
    r"\bschema v\d+\b", r"\b(was|were) renamed\b", r"\bbefore (the|this) (change|rewrite|refactor)\b",
    r"\bbefore \S+ existed\b", r"\bbefore bgbench\b", r"\b(older|earlier) (last\.pt|generators?)\b",
)]


def narrations(text: str) -> list:
    """The phrases of `text` (a comment or a docstring) that narrate what the code used to do."""
    flat = " ".join(text.split())
    return [m.group(0) for p in HISTORY for m in p.finditer(flat)]


def prose(source: str) -> list:
    """(line, text) of a module's comments (a run of comment lines is one text) and its bare strings
    (docstrings, attribute docstrings)."""
    import ast
    import io
    import tokenize
    out, last = [], None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            line = tok.start[0]
            if last is not None and out and last == line - 1:
                out[-1] = (out[-1][0], out[-1][1] + " " + tok.string.lstrip("#:"))
            else:
                out.append((line, tok.string.lstrip("#:")))
            last = line
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            out.append((node.lineno, node.value.value))
    return out


def narrating(root: Path) -> list:
    """'path:line: phrase' for each narration in the comments and docstrings of the .py files under `root`."""
    return [f"{p.relative_to(root)}:{line}: {hit}" for p in sorted(root.rglob("*.py"))
            for line, text in prose(p.read_text(encoding="utf-8")) for hit in narrations(text)]


def test_the_history_check_knows_a_narration_from_a_plain_sentence():
    for sample in ("rows are made in the caller, one batch behind, as they always were",
                   "Runs of bgbench 0.1 until December 2026: numpy's generator",
                   "the store inserts it as it inserted the tuple it replaces",
                   "Names that were public and still resolve as `bgbench.NAME` (users' code keeps working)",
                   "An option used to be written in five places",
                   "runs stored before v3 lack some measures", "None for a run recorded before formats were",
                   "older synth datasets have boxes_<split>.json, and both are still read",
                   "Bring a store written by an older bgbench up to SCHEMA_VERSION (migrations.py)",
                   "a *positional the function keeps to refuse old positional calls"):
        assert narrations(sample), sample
    for sample in ("MIXED-RAND, where the background no longer predicts the class",
                   "the images alone (used to recompute BN statistics for SWA)",
                   "a kill leaves the old file or the new one", "survivors stored before it are re-examined",
                   "an earlier invocation's delta and audit counts", "the legacy flags must not be mixed with this API",
                   "the relative foreground sensitivity, as RIVAL10's code computes it",
                   "composites and probes keep working on [0,1] images"):
        assert not narrations(sample), sample


def test_the_history_check_finds_a_planted_comment_and_docstring(tmp_path):
    (tmp_path / "m.py").write_text('"""A module."""\n\n\n# rows come one batch behind,\n# as they always were\n'
                                   'def f():\n    """Reads stores written by an older bgbench."""\n', encoding="utf-8")
    assert narrating(tmp_path) == ["m.py:4: as they always were", "m.py:7: older bgbench",
                                   "m.py:7: written by an older"]


def test_no_comment_or_docstring_narrates_what_the_code_used_to_do():
    assert narrating(SRC) == []
