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
