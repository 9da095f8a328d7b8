"""The measures' machinery, beside `measures/` (whose template of a model run, `measures.running`,
and whose probes and analyses use it): batches of images and masks, the bootstrap, sharding across
ranks, feature maps, Grad-CAM and the per-image tables of stored runs."""
