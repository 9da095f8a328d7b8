"""Running a model over images and what its outputs become: the feed, batched prediction, metrics
as pure functions, the precision of the forwards and the user's own photos. Import the submodules."""
