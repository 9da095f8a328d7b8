"""Zero-shot classifiers: a head built from text, as in CLIP's ImageNet evaluation.

Every class name is put into every prompt template; each prompt's text embedding is normalized,
the embeddings of one class are averaged over the templates and normalized again, and the image's
normalized embedding is scored against each class by `logit_scale * cos` (+ `logit_bias` where the
model has one). open_clip's `build_zero_shot_classifier` computes the head; this module decides
what it is built from (which class names, which templates) and records it, so a run can be redone.

Two label sets:
- 'imagenet': the 1000 ImageNet class names open_clip ships (`IMAGENET_CLASSNAMES`); predictions
  then go through the IN-9 decision mapping, like any 1000-class model;
- 'dataset': the dataset's own class folders with their 'NN_' prefix stripped ('02_wheeled
  vehicle' -> 'wheeled vehicle'), so IN-9 gives its 9 superclass names and any other dataset its
  folder names.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from ..classes import IN9_FOLDERS
from ..errors import BgbenchError, CheckpointError

IMAGENET_LABELS = "imagenet"
DATASET_LABELS = "dataset"
_PREFIX = re.compile(r"^\d+_")


def prompt_name(folder: str) -> str:
    """The class name a prompt uses for a class folder: the folder without its 'NN_' prefix."""
    return _PREFIX.sub("", folder, count=1)


def resolve_label_set(labels: str, classes: Optional[Sequence[str]]) -> str:
    """'imagenet' or 'dataset' for `labels` ('auto' picks imagenet on IN-9 or without classes)."""
    if labels == "auto":
        return IMAGENET_LABELS if classes is None or tuple(classes) == IN9_FOLDERS else DATASET_LABELS
    if labels == DATASET_LABELS and not classes:
        raise BgbenchError("--labels dataset builds the head from the dataset's class folders; give the data "
                           "(--data ROOT) so that they are known")
    return labels


def class_names(label_set: str, classes: Optional[Sequence[str]]) -> List[str]:
    """The names the prompts are made of, in output order."""
    if label_set == IMAGENET_LABELS:
        from open_clip.zero_shot_metadata import IMAGENET_CLASSNAMES
        return list(IMAGENET_CLASSNAMES)
    return [prompt_name(c) for c in classes]


def template_texts(templates: str) -> List[str]:
    """Prompt templates with '{}' where the class name goes: 'openai' (CLIP's 80 ImageNet prompts),
    'simple' (open_clip's 7), or a text file holding one template per line."""
    from open_clip.zero_shot_metadata import OPENAI_IMAGENET_TEMPLATES, SIMPLE_IMAGENET_TEMPLATES
    builtin = {"openai": OPENAI_IMAGENET_TEMPLATES, "simple": SIMPLE_IMAGENET_TEMPLATES}
    if templates in builtin:
        return [t("{}") for t in builtin[templates]]
    path = Path(templates).expanduser()
    if not path.is_file():
        raise BgbenchError(f"--templates {templates!r} is neither openai, simple nor a text file of templates")
    lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    for n, line in enumerate(lines, 1):
        if line.count("{}") != 1 or line.replace("{}", "").count("{") or line.replace("{}", "").count("}"):
            raise BgbenchError(f"{path} line {n}: a template holds '{{}}' exactly once (where the class name "
                               f"goes) and no other braces: {line!r}")
    if not lines:
        raise BgbenchError(f"{path} holds no templates")
    return lines


class ZeroShotClassifier(nn.Module):
    """An image tower and a text-built head: logits = scale * normalize(visual(x)) @ head.T (+ bias).

    Attributes:
        native_hw: the one input size the tower takes (its position embeddings are for it), or None.
        patch_size: the tower's patch size when it is a vision transformer (for Grad-CAM's token grid).
    """

    def __init__(self, visual: nn.Module, head: torch.Tensor, logit_scale: float,
                 logit_bias: Optional[float] = None, native_hw: Optional[Tuple[int, int]] = None, name: str = "",
                 head_bias: Optional[torch.Tensor] = None):
        super().__init__()
        self.visual = visual
        self.register_buffer("head", head.detach().float().contiguous())
        #: a per-class bias: a head fitted on the image embeddings (last-layer retraining), not built from
        #: text; a None buffer (a text-built head) is left out of the state dict
        self.register_buffer("head_bias", None if head_bias is None else head_bias.detach().float().contiguous())
        self.logit_scale = float(logit_scale)
        self.logit_bias = None if logit_bias is None else float(logit_bias)
        self.native_hw = native_hw
        self.model_name = name
        patch = getattr(visual, "patch_size", None)
        self.patch_size = (tuple(int(p) for p in patch) if isinstance(patch, (tuple, list)) else
                           (int(patch), int(patch)) if patch else None)

    def vit_layer(self) -> Optional[str]:
        """Grad-CAM's default layer when the tower is a vision transformer (batch-first tokens): the
        last block's pre-attention norm, `ln_1`, as for timm's `norm1`; None otherwise."""
        blocks = getattr(getattr(self.visual, "transformer", None), "resblocks", None)
        if self.patch_size is None or blocks is None or not getattr(self.visual.transformer, "batch_first", False):
            return None
        return f"visual.transformer.resblocks.{len(blocks) - 1}.ln_1"

    def pre_logits(self, x: torch.Tensor) -> torch.Tensor:
        """The normalized image embedding the head scores (what last-layer retraining fits on)."""
        if self.native_hw is not None and tuple(x.shape[-2:]) != tuple(self.native_hw):
            h, w = self.native_hw
            raise BgbenchError(f"{self.model_name} takes {h}x{w} inputs only (its position embeddings are for that "
                               f"size), got {x.shape[-2]}x{x.shape[-1]}; use --resize native")
        feats = self.visual(x)
        if isinstance(feats, (tuple, list)):  # CoCa's tower returns (pooled, tokens)
            feats = feats[0]
        return F.normalize(feats.float(), dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.logit_scale * self.pre_logits(x) @ self.head.T
        if self.logit_bias is not None:
            logits = logits + self.logit_bias
        return logits if self.head_bias is None else logits + self.head_bias


def build_head(clip: nn.Module, tokenizer, names: Sequence[str], templates: Sequence[str], device: str
               ) -> torch.Tensor:
    """(classes, dim) text head: open_clip's `build_zero_shot_classifier`, on `device`, returned on the CPU."""
    from open_clip import build_zero_shot_classifier
    clip = clip.to(device)
    try:
        with torch.no_grad():
            head = build_zero_shot_classifier(clip, tokenizer, list(names), list(templates),
                                              num_classes_per_batch=10, device=device, use_tqdm=False)
    except RuntimeError as e:
        raise CheckpointError(f"cannot build the zero-shot head: {str(e).splitlines()[0][:200]}") from None
    finally:
        clip.to("cpu")
    return head.T.float().cpu()
