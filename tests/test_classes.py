"""The ImageNet-1k -> IN-9 decision mapping."""
import numpy as np
import torch

from bgbench.classes import IN9_FOLDERS, Mapping, imagenet_to_in9, map_logits


def test_370_classes_map_and_630_do_not():
    table = imagenet_to_in9()
    assert table.shape == (1000,)
    assert int((table >= 0).sum()) == 370
    assert int((table == -1).sum()) == 630
    assert set(np.unique(table[table >= 0])) == set(range(9))


def test_known_rows_of_the_upstream_table():
    table = imagenet_to_in9()
    assert table[151] == 0 and table[268] == 0  # dogs
    assert table[0] == 8  # tench: fish
    assert (table[281:286] == -1).all()  # domestic cats are in no IN-9 class upstream
    assert table[300] == 5 and table[365] == 7


def _logits_for(classes):
    logits = torch.full((len(classes), 1000), -10.0)
    for row, c in enumerate(classes):
        logits[row, c] = 10.0
    return logits


def test_argmax_rule_maps_and_unmapped_counts_wrong():
    table = imagenet_to_in9()
    unmapped = int(np.nonzero(table == -1)[0][0])
    classes = [151, 0, unmapped]
    pred, conf = map_logits(_logits_for(classes), Mapping.ARGMAX)
    assert pred.tolist() == [0, 8, -1]
    labels = torch.tensor([0, 8, 0])
    assert (pred == labels).tolist() == [True, True, False]  # -1 never equals a label
    assert (conf > 0.99).all()


def test_superclass_rule_sums_probabilities():
    # Many small dog probabilities outweigh one large fish probability.
    logits = torch.full((1, 1000), -30.0)
    logits[0, 0] = 2.0  # tench (fish)
    logits[0, 151:161] = 1.0  # ten dogs
    pred_argmax, _ = map_logits(logits, "argmax")
    pred_super, conf = map_logits(logits, "superclass")
    assert pred_argmax.item() == 8
    assert pred_super.item() == 0
    assert 0 < conf.item() <= 1
    assert len(IN9_FOLDERS) == 9
