"""The groups measure's summary: accuracy per group, its worst group and the mean over groups,
computed where eval computes it too (`measures.common.groups`)."""
from ..common.groups import MIN_GROUPS, MIN_IMAGES, GroupAccuracy, group_accuracy  # noqa: F401 (its summary)
