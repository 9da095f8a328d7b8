"""What more than one measure uses, in one place: no measure's folder imports another's, so a
measure is read, changed or removed alone (tests/test_layers.py checks it). A module here names
what it shares (`regions`: the image regions noise and ablation act on; `groups`: accuracy per
group, which eval reports and `analyze groups` reads back; ...) and imports no measure."""
