"""Machinery the measures share: batches of images and masks, the bootstrap, sharding across ranks,
feature maps, Grad-CAM and the per-image tables of stored runs."""
