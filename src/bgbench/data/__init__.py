"""Datasets: the layouts (`layout`, and a reader per release, which `resolve` chooses between),
decoding and the pixel cache, the Synthetic-9 drawing, and the one dataset writer (manifest, pool,
shards) that synth, build and edit share. It re-exports nothing, so that importing one of its
modules (a measure's `data.layout`) does not import every reader."""
