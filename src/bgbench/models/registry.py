"""One string names a model: '<scheme>:<rest>', e.g. 'timm:<arch>', 'file:<path>' or 'zoo:<name>'.

`create_model` resolves the string (plus an optional checkpoint) into a `BgModel`: the network,
wrapped with its normalization, and a `ModelSpec` that records what it is. The scheme is looked up
in the registry of `schemes.py`; the modules in SCHEME_MODULES register the built-in ones.
"""
from __future__ import annotations

import fnmatch
import importlib
from typing import List, Optional

from .. import checks
from ..errors import CheckpointError
from .norms import NORMS, norm_for
from .schemes import SCHEMES, ModelRequest, get_scheme, list_schemes, usages  # noqa: F401 (list_schemes re-exported)
from .spec import BgModel

#: Modules whose import registers a scheme (in the order `list_models` lists them).
SCHEME_MODULES = (".timm_scheme", ".file_scheme", ".zoo")

for _module in SCHEME_MODULES:
    importlib.import_module(_module, __package__)


def list_models(pattern: str = "*") -> List[str]:
    """Model strings of every scheme that can list its models, filtered with fnmatch ('timm:resnet*')."""
    head = pattern.split(":", 1)[0] if ":" in pattern else None
    names = []
    for scheme in SCHEMES.values():
        if scheme.names is None or (head is not None and not fnmatch.fnmatch(scheme.name, head)):
            continue
        names += [f"{scheme.name}:{n}" for n in scheme.names()]
    return [n for n in names if fnmatch.fnmatch(n, pattern)]


def create_model(name: str, checkpoint: Optional[str] = None, num_classes: Optional[int] = None,
                 trust_checkpoint: bool = False, norm: str = "auto") -> BgModel:
    """Resolve a model string (and optional checkpoint) into an eval-mode `BgModel`.

    Args:
        name: '<scheme>:<rest>'; `bgbench.list_models()` lists what the schemes offer.
        checkpoint: weights for a timm architecture (any supported format).
        num_classes: output width for a randomly initialised timm model (default 9).
        trust_checkpoint: allow full unpickling (only for files you trust).
        norm: 'auto' (the scheme's choice: from the checkpoint, else by label space), 'in9', 'imagenet' or 'none'.
    """
    scheme_name, _, target = str(name).partition(":")
    if not target:
        raise CheckpointError(f"model {name!r} must look like {usages()}")
    checks.one_of("--norm", norm, NORMS)
    request = ModelRequest(name=str(name), target=target, checkpoint=str(checkpoint) if checkpoint else None,
                           num_classes=num_classes, trust_checkpoint=trust_checkpoint, norm=norm)
    net, spec = get_scheme(scheme_name, str(name)).build(request)
    if norm != "auto":
        spec.mean, spec.std = norm_for(norm, spec.num_classes)
    return BgModel(net, spec).eval()
