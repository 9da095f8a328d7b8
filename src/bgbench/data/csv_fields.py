"""CSV fields of any length.

Python's csv module refuses a field longer than 131,072 characters (`csv.Error: field larger than
field limit`), a guard for no file bgbench reads: ImageNet's LOC_val_solution.csv holds all of an
image's boxes in one field, and a predictions file's or a group file's cell is the user's to size.
Every CSV reader lifts the limit before reading, so a long field is read like any other.
"""
from __future__ import annotations

import csv
import sys


def allow_long_fields() -> None:
    """Lift the csv module's limit on one field's length to the largest this platform takes (a C
    long: `sys.maxsize` overflows it where a long is 32 bits, so it is halved until it fits)."""
    limit = sys.maxsize
    while True:
        try:
            csv.field_size_limit(limit)
            return
        except OverflowError:
            limit //= 2
