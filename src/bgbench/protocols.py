"""Reference protocols: named settings that fix everything that changes a number.

A BG-Gap or a challenge accuracy depends on more than the model: the decision mapping of a
1000-class output, the label set and prompt templates of a zero-shot head, whether images are
resized to the model's input size, the precision and test-time cropping. Two runs are comparable
only when all of these agree, so a protocol names one choice of each; runs record the protocol they
ran under, and the leaderboard ranks only runs of one protocol together (runs without one form
their own group).

`in9-v1`, the reference protocol on IN-9:
- mapping `argmax` (the paper's rule: argmax over the 1000 classes, then upstream's table);
- zero-shot label set `imagenet` (the 1000 ImageNet class names, then the same mapping, so a CLIP
  model is scored exactly like a supervised ImageNet model) with CLIP's 80 `openai` templates;
- resize `native`: every model sees its own input size (a no-op for 224-px models on IN-9);
- precision `fp32` (exact; TF32 off on CUDA); no ten-crop; normalization as the model's own.

Torch-free: the CLI's choices come from here.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, Optional

from .classes import Mapping
from .errors import BgbenchError
from .options import flag


@dataclass(frozen=True)
class Protocol:
    """The settings a protocol fixes (the values every run under it must have)."""

    name: str
    mapping: Mapping
    labels: str
    templates: str
    resize: str
    precision: str  # an eval precision (`evaluation.precision_flag.Precision`, a layer above)
    ten_crop: bool
    norm: str

    def settings(self) -> dict:
        """What a run records under `protocol_settings`."""
        return {k: v for k, v in asdict(self).items() if k != "name"}


PROTOCOLS: Dict[str, Protocol] = {
    "in9-v1": Protocol("in9-v1", mapping=Mapping.ARGMAX, labels="imagenet", templates="openai", resize="native",
                       precision="fp32", ten_crop=False, norm="auto"),
}

#: The values a flag has when the user did not set it: a protocol fills those in.
UNSET = {"labels": "auto", "resize": "auto"}


def get_protocol(name: Optional[str]) -> Optional[Protocol]:
    """The protocol `name` (None: no protocol); a one-line error naming the known ones."""
    if name is None:
        return None
    if name not in PROTOCOLS:
        raise BgbenchError(f"unknown protocol {name!r}; known: {', '.join(PROTOCOLS)}")
    return PROTOCOLS[name]


def settings_of(protocol: Optional[str]) -> Optional[dict]:
    """What a run records as `protocol_settings` (None without a protocol)."""
    p = get_protocol(protocol)
    return None if p is None else p.settings()


def resolve(protocol: Optional[str], **given) -> dict:
    """The options of a run under `protocol`: each given option (flag -> value) must be the protocol's
    value, or unset ('auto'), which the protocol fills in. Without a protocol, `given` as it is.

    Raises a one-line error naming the first flag that contradicts the protocol.
    """
    p = get_protocol(protocol)
    fixed = {} if p is None else p.settings()
    for key, value in given.items():
        if key in fixed and value != fixed[key] and value != UNSET.get(key, object()):
            flag = "--" + key.replace("_", "-")
            shown = fixed[key] if not isinstance(fixed[key], bool) else ("on" if fixed[key] else "off")
            raise BgbenchError(f"--protocol {p.name} fixes {flag} {shown}; drop {flag} or the protocol")
    return {key: fixed.get(key, value) for key, value in given.items()}


def check_spec(protocol: Optional[str], spec: dict) -> None:
    """A model already built must have been built as the protocol says (resize, zero-shot head)."""
    p = get_protocol(protocol)
    if p is None:
        return
    name = spec.get("name")
    if spec.get("resize", "none") != p.resize:
        raise BgbenchError(f"--protocol {p.name} needs resize {p.resize}; {name} was built with {spec.get('resize')}")
    zero_shot = (spec.get("extra") or {}).get("zero_shot")
    if zero_shot and (zero_shot.get("label_set") != p.labels or zero_shot.get("templates") != p.templates):
        raise BgbenchError(f"--protocol {p.name} needs a zero-shot head over the {p.labels} labels with the "
                           f"{p.templates} templates; {name} has {zero_shot.get('label_set')} / "
                           f"{zero_shot.get('templates')}")


def protocol_flag() -> dict:
    """The `--protocol` flag of a config field (eval, the challenge)."""
    return flag("--protocol", "a reference protocol that fixes everything that changes a number (mapping argmax, "
                "zero-shot labels imagenet with the openai templates, resize native, fp32, no ten-crop); recorded, "
                "and the leaderboard ranks runs of one protocol together", choices=list(PROTOCOLS), type=str)
