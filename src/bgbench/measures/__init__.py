"""One package per measure: what bgbench measures, each with its engine, summary and result."""
