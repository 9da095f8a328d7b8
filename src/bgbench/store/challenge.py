"""The challenge's own tables and queries: per-foreground verdicts, bf16-verified's state (near ties
and audit counts) and per-background attack success rates. Kept apart from the core because only
the challenge's runner (resume, torchrun, bf16-verified) writes them, row by row as it goes."""
from __future__ import annotations

import json
from typing import Iterable, List, Optional, Sequence

import numpy as np

from .schema import TableSchema, declare_table

#: One verdict per foreground (committed as the run goes, so that a killed run resumes).
CHALLENGE_FG = declare_table(TableSchema("challenge_fg", (
    ("image_id", "TEXT NOT NULL"), ("label", "INTEGER NOT NULL"), ("clean_pred", "INTEGER NOT NULL"),
    ("fooled", "INTEGER NOT NULL"), ("pairs", "INTEGER NOT NULL"), ("fooling_bg", "TEXT"), ("fooling_pred", "INTEGER")),
    key=("image_id",)))
#: bf16-verified's state, all of it: a row per foreground (its image_id; its near ties as JSON, re-examined
#: when delta rises, and `lowest`, their smallest margin) and one for the run (image_id `RUN_ROW`; its
#: audit counts and delta so far as JSON, `lowest` NULL), so that a killed run resumes with both.
CHALLENGE_VERIFIED = declare_table(TableSchema("challenge_verified", (
    ("image_id", "TEXT NOT NULL"), ("lowest", "REAL"), ("state", "TEXT NOT NULL")), key=("image_id",)))
#: The image_id of a run's own row in challenge_verified (no foreground's id is empty).
RUN_ROW = ""
#: The composites evaluated so far, added by every process of the run (one row per run): a resumed or
#: extended run counts the work of each invocation, stored with the verdicts it went into.
CHALLENGE_PROGRESS = declare_table(TableSchema("challenge_progress", (("pairs", "INTEGER NOT NULL"),)))
#: --full: each foreground's whole row of the prediction matrix (uint8 bytes, one a background in the
#: dataset's order; 255: a class outside the dataset's), stored with its verdict. In the store, not
#: in a file beside it, so that it is the run's wherever the store goes: two stores in one folder,
#: two jobs on one node and a merged store each keep their own runs' rows.
CHALLENGE_ROW = declare_table(TableSchema("challenge_row", (
    ("image_id", "TEXT NOT NULL"), ("preds", "BLOB NOT NULL")), key=("image_id",)))
#: --full: the attack success rate of every background.
CHALLENGE_BG = declare_table(TableSchema("challenge_bg", (
    ("bg_id", "TEXT NOT NULL"), ("bg_class", "INTEGER NOT NULL"), ("asr", "REAL NOT NULL")), key=("bg_id",)))


class ChallengeTables:
    """The challenge's queries, mixed into `Store` (which supplies `conn` and `_insert`)."""

    def add_challenge_results(self, run_id: int, rows: Iterable[tuple], near_ties: Iterable[tuple] = (),
                              state: Optional[dict] = None, pairs: int = 0, matrix_rows: Iterable[tuple] = ()) -> None:
        """Challenge progress, in one transaction (so a killed run never keeps half of it).

        rows: (image_id, label, clean_pred, fooled, pairs, fooling_bg, fooling_pred);
        matrix_rows (--full): (image_id, the foreground's predictions as uint8 bytes);
        near_ties (bf16-verified): (image_id, lowest margin or None, near-tie JSON);
        state (bf16-verified): the run's audit counts and delta so far;
        pairs: composites this process evaluated since its last call, added to the run's count.
        """
        with self.conn:
            self._insert("challenge_fg", run_id, rows)
            self._insert("challenge_row", run_id, matrix_rows)
            self._insert("challenge_verified", run_id, near_ties)
            if pairs:
                self.conn.execute("INSERT INTO challenge_progress (run_id, pairs) VALUES (?, ?) ON CONFLICT(run_id) "
                                  "DO UPDATE SET pairs = pairs + excluded.pairs", (run_id, int(pairs)))
            if state is not None:  # the larger delta wins: another rank may have raised it meanwhile
                self.conn.execute(
                    "INSERT INTO challenge_verified (run_id, image_id, lowest, state) VALUES (?1, ?3, NULL, ?2) "
                    "ON CONFLICT(run_id, image_id) DO UPDATE SET state = json_set(?2, '$.delta', "
                    "max(coalesce(json_extract(challenge_verified.state, '$.delta'), json_extract(?2, '$.delta')), "
                    "json_extract(?2, '$.delta')))", (run_id, json.dumps(state, sort_keys=True), RUN_ROW))

    def raise_challenge_delta(self, run_id: int, delta: float) -> None:
        """bf16-verified: an audit raised delta; store it now (unless a larger one is stored), so that
        a run killed before its survivors are re-examined re-examines them when it resumes."""
        with self.conn:
            self.conn.execute(
                "INSERT INTO challenge_verified (run_id, image_id, lowest, state) "
                "VALUES (?1, ?3, NULL, json_object('delta', ?2)) ON CONFLICT(run_id, image_id) DO UPDATE SET "
                "state = json_set(challenge_verified.state, '$.delta', "
                "max(coalesce(json_extract(challenge_verified.state, '$.delta'), ?2), ?2))",
                (run_id, float(delta), RUN_ROW))

    def challenge_near_ties(self, run_id: int, at_most: float) -> List:
        """bf16-verified: (image_id, near) of the foregrounds with a kept margin at or below `at_most`."""
        return self.conn.execute("SELECT image_id, state AS near FROM challenge_verified WHERE run_id=? "
                                 "AND image_id <> ? AND lowest IS NOT NULL AND lowest <= ? ORDER BY image_id",
                                 (run_id, RUN_ROW, float(at_most))).fetchall()

    def challenge_state(self, run_id: int) -> Optional[dict]:
        """bf16-verified: the audit counts and delta stored with the run's progress, if any."""
        row = self.conn.execute("SELECT state FROM challenge_verified WHERE run_id=? AND image_id=?",
                                (run_id, RUN_ROW)).fetchone()
        return json.loads(row["state"]) if row else None

    def challenge_pairs(self, run_id: int) -> int:
        """The composites every process of the run evaluated, as stored with its verdicts."""
        row = self.conn.execute("SELECT pairs FROM challenge_progress WHERE run_id=?", (run_id,)).fetchone()
        return int(row["pairs"]) if row else 0

    def challenge_results(self, run_id: int) -> List:
        return self.conn.execute("SELECT * FROM challenge_fg WHERE run_id=? ORDER BY image_id", (run_id,)).fetchall()

    def challenge_matrix(self, run_id: int, image_ids: Optional[Sequence[str]] = None) -> Optional[np.ndarray]:
        """A --full run's prediction matrix, foregrounds x backgrounds (uint8), its rows in the order of
        `image_ids` (default: the stored foregrounds by image id, as `challenge_results` lists them);
        None when the run stored no row, or lacks one of `image_ids`."""
        stored = {r["image_id"]: r["preds"] for r in self.conn.execute(
            "SELECT image_id, preds FROM challenge_row WHERE run_id=? ORDER BY image_id", (run_id,))} \
            if "challenge_row" in self.tables() else {}
        ids = sorted(stored) if image_ids is None else list(image_ids)
        if not stored or any(i not in stored for i in ids):
            return None
        return np.frombuffer(b"".join(stored[i] for i in ids), dtype=np.uint8).reshape(len(ids), -1)

    def challenge_backgrounds(self, run_id: int) -> List:
        """Per background of a --full challenge run: bg_id, bg_class, asr (empty for other runs)."""
        return self.conn.execute("SELECT bg_id, bg_class, asr FROM challenge_bg WHERE run_id=? ORDER BY bg_id",
                                 (run_id,)).fetchall()

    def has_challenge_backgrounds(self, run_id: int) -> bool:
        """Whether a challenge run stored attack success rates (it ran with --full)."""
        return self.conn.execute("SELECT 1 FROM challenge_bg WHERE run_id=? LIMIT 1", (run_id,)).fetchone() is not None
