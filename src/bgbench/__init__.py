"""bgbench: measure, and reduce, how much an image classifier relies on image backgrounds."""
__version__ = "0.1.0"

from .api import evaluate, load_model  # noqa: E402
from .models import create_model, list_models  # noqa: E402
from .variants import list_variants  # noqa: E402

__all__ = ["__version__", "create_model", "evaluate", "list_models", "list_variants", "load_model"]
