"""`python -m bgbench` (and `torchrun -m bgbench challenge ...`)."""
import sys

from .cli import main

sys.exit(main())
