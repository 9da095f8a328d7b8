"""The penultimate layer of a classifier, as Salient ImageNet reads it: pooled features, the
linear head on them, and the last feature map whose channels are their activation maps.

Salient ImageNet ranks the *pooled* features that feed the linear head (a robust ResNet-50's 2,048
penultimate neurons) and draws each one's activation map from the matching channel of the last
feature map (`layer4`), before pooling. For a timm model those are `forward_features` (the map),
`forward_head(pre_logits=True)` (the pooled features) and `get_classifier()` (the head). A vision
transformer's map is its patch tokens reshaped to the patch grid, as the saliency probe does.

Two properties decide whether the numbers mean what they say, and both are checked on the first
batch rather than assumed:
- the logits must be the head applied to the pooled features (a linear head), or a feature's
  contribution weight x activation is not its share of the logit: otherwise an error;
- the pooled features should be the spatial mean of the map's channels (global average pooling).
  Where they are not (a norm after pooling, a ViT's class token), a channel's map still shows
  where it fires, but not exactly what the pooled feature sums: `pooled_is_map_mean` says so, and
  the runner warns and records it.

No files, no store: tensors in, tensors out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from ..errors import BgbenchError

#: Relative tolerance of the two checks (float32 sums in another order differ in the last bits).
CHECK_RTOL = 1e-4


@dataclass
class LinearHead:
    """Access to a timm-style network's maps, pooled features and linear head."""

    model: object  # a BgModel: normalization inside, `net` the timm network
    weight: object  # (classes, features) tensor of the head
    bias: Optional[object]
    pooled_is_map_mean: Optional[bool] = None  # set by `check` on the first batch

    @classmethod
    def of(cls, model) -> "LinearHead":
        """The head of `model` (a BgModel); a one-line error for networks that lack one."""
        import torch.nn as nn
        net = model.net
        needed = ("forward_features", "forward_head", "get_classifier")
        if not all(callable(getattr(net, name, None)) for name in needed):
            raise BgbenchError(f"probe features needs a timm model (forward_features, forward_head(pre_logits=True), "
                               f"get_classifier()); {model.spec.name} is a {type(net).__name__}")
        head = net.get_classifier()
        if not isinstance(head, nn.Linear):
            raise BgbenchError(f"probe features needs a single linear head on the pooled features; "
                               f"{model.spec.name}'s classifier is a {type(head).__name__}")
        return cls(model=model, weight=head.weight.detach(), bias=None if head.bias is None else head.bias.detach())

    @property
    def features(self) -> int:
        return int(self.weight.shape[1])

    def forward(self, x) -> Tuple[object, object, object]:
        """(feature maps (N, D, h, w), pooled features (N, D), logits (N, classes)) of [0,1] images x."""
        net = self.model.net
        raw = net.forward_features(self.model.normalize(x))
        pooled = net.forward_head(raw, pre_logits=True)
        logits = net.forward_head(raw)
        return self.grid(raw, tuple(x.shape[-2:])), pooled, logits

    def grid(self, raw, image_hw: Tuple[int, int]):
        """The last feature map as (N, D, h, w): a CNN's as it is (NHWC permuted), a ViT's patch
        tokens reshaped to the patch grid (class and other prefix tokens dropped): `feature_maps.as_grid`."""
        from .feature_maps import as_grid
        return as_grid(self.model.net, raw, image_hw, self.model.spec.name, who="probe features")

    def check(self, maps, pooled, logits) -> None:
        """On the first batch: the logits are the head on the pooled features (else an error), the
        map has one channel per pooled feature (else an error), and whether the pooled features
        are the channels' spatial means (recorded in `pooled_is_map_mean`)."""
        import torch
        name = self.model.spec.name
        if pooled.dim() != 2 or pooled.shape[1] != self.features:
            raise BgbenchError(f"{name}'s pooled features have shape {tuple(pooled.shape)}, but its head takes "
                               f"{self.features} features")
        linear = pooled @ self.weight.T + (0 if self.bias is None else self.bias)
        if not torch.allclose(linear, logits, rtol=CHECK_RTOL, atol=CHECK_RTOL * (1 + float(logits.abs().max()))):
            raise BgbenchError(f"{name}'s logits are not its linear head applied to forward_head(pre_logits=True); "
                               "probe features needs a linear head on the pooled features")
        if maps.shape[1] != self.features:
            raise BgbenchError(f"{name}'s last feature map has {maps.shape[1]} channels but its head takes "
                               f"{self.features} pooled features, so a feature has no activation map")
        mean = maps.mean(dim=(2, 3))
        self.pooled_is_map_mean = bool(torch.allclose(mean, pooled, rtol=CHECK_RTOL,
                                                      atol=CHECK_RTOL * (1 + float(pooled.abs().max()))))
