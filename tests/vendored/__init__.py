"""Source code of the benchmarks bgbench reads, copied verbatim (or with the lines a test cannot run
marked), so that the tests hold bgbench to the benchmarks' own code. Each file names its repository,
commit, path and licence."""
