"""User-facing errors.

Anything raised as a `BgbenchError` is the user's to fix (a missing folder, a checkpoint that
does not fit). The CLI prints it as one line, without a traceback; everything else is a bug and
keeps its traceback.
"""


class BgbenchError(Exception):
    """An error caused by the user's input, reported as one line."""


class DataError(BgbenchError):
    """The dataset on disk does not have the expected layout or content."""


class CheckpointError(BgbenchError):
    """A checkpoint cannot be read or does not fit the requested architecture."""


def with_article(word: str) -> str:
    """'an eval', 'a challenge': the indefinite article for a word in a user message."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"
