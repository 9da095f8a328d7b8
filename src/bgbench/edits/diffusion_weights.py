"""The diffusion backend's network: OpenAI guided-diffusion checkpoints or `diffusers` models, as a
`diffusers.UNet2DModel` that predicts noise and a learned variance (6 output channels).

ImageNet-E's toolkit samples with guided-diffusion's `256x256_diffusion_uncond.pt` (ADM: 256
channels, channel_mult 1,1,2,2,4,4, two res blocks per level, attention at 32/16/8 px, 64-channel
heads, scale-shift norm, residual up/down-sampling, learned sigma). Its state dict is mapped key by
key onto the `diffusers` blocks of the same architecture (ResnetDownsampleBlock2D/AttnDownBlock2D,
`resnet_time_scale_shift="scale_shift"`, resnet up/down-samplers), with every size read from the
tensors. Only the head width is not in the file: `head_channels` (64, the released model's).

The user names the weights: a `.pt`/`.pth`/`.bin` state dict (read with `weights_only=True`), a
`.safetensors` file, a `diffusers` folder (the model itself or a pipeline with `unet/`), or a hub
name, which alone downloads. Whatever does not fit is one line (`CheckpointError`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from ..errors import BgbenchError, CheckpointError

EXTRA = "pip install 'bgbench[diffusion]'"
HEAD_CHANNELS = 64
TOOLKIT_SIZE = 256  # the toolkit's model_output_size
_HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass
class DiffusionWeights:
    unet: object  # diffusers.UNet2DModel
    kind: str  # "guided-diffusion" or "diffusers"
    sha256: str
    sample_size: int


def load_weights(source: str | Path, head_channels: int = HEAD_CHANNELS) -> DiffusionWeights:
    """The network named by `source` (a file, a folder or a hub name), in eval mode on the CPU."""
    try:
        from diffusers import UNet2DModel
    except ImportError:
        raise BgbenchError(f"--backend diffusion needs diffusers, an optional extra: {EXTRA}") from None
    path = Path(source).expanduser()
    if path.is_file():
        import torch

        from ..models.checkpoint import sha256_file
        try:  # a guided-diffusion state dict
            if path.suffix == ".safetensors":
                from safetensors.torch import load_file
                sd = load_file(str(path))
            else:
                sd = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:  # any unreadable file: pickle, zip and safetensors raise their own kinds
            raise CheckpointError(f"--weights {path}: cannot read it as a state dict "
                                  f"({type(e).__name__}: {' '.join(str(e).split())[:160]})") from None
        if isinstance(sd, dict) and "input_blocks.0.0.weight" not in sd:  # a training checkpoint holding one
            sd = next((sd[key] for key in ("state_dict", "model", "ema") if isinstance(sd.get(key), dict)), sd)
        if not isinstance(sd, dict) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
            raise CheckpointError(f"--weights {path}: not a state dict of tensors")
        config = adm_config(sd, head_channels, str(path))
        state = adm_to_diffusers(sd, config)  # refused here, before the network is built, if it does not fit
        unet = UNet2DModel(**config)
        try:
            missing, unexpected = unet.load_state_dict(state, strict=False)
        except RuntimeError as e:  # a tensor of the wrong shape
            detail = next((ln.strip() for ln in str(e).splitlines() if "size mismatch" in ln), str(e).splitlines()[0])
            raise CheckpointError(f"--weights {path}: does not fit an ADM UNet ({detail[:200]})") from None
        if missing or unexpected:
            raise CheckpointError(f"--weights {path}: does not fit an ADM UNet ({len(missing)} missing, "
                                  f"{len(unexpected)} unexpected keys; first: {(missing or unexpected)[0]})")
        return DiffusionWeights(unet.eval(), "guided-diffusion", sha256_file(path), config["sample_size"])
    if path.is_dir():
        return _from_folder(path, str(source))
    if _HUB_NAME.match(str(source)) and not str(source).startswith((".", "~")):
        return _from_hub(str(source))
    raise CheckpointError(f"--weights {source}: no such file or folder (a guided-diffusion .pt, a .safetensors "
                          f"file, a diffusers folder, or a hub name OWNER/NAME)")


# ---------------------------------------------------------------------------------------------
# guided-diffusion state dicts

def _indices(sd: Dict[str, object], prefix: str) -> List[int]:
    return sorted({int(k.split(".")[1]) for k in sd if k.startswith(prefix + ".")})


def adm_config(sd: Dict[str, object], head_channels: int, name: str) -> dict:
    """The `UNet2DModel` config of a guided-diffusion state dict, read from its tensors; one line
    for a network the backend cannot run (not ADM, class-conditional, no learned variance, ...)."""
    def refuse(why: str):
        raise CheckpointError(f"--weights {name}: {why}")

    missing = [k for k in ("input_blocks.0.0.weight", "time_embed.0.weight", "middle_block.0.in_layers.0.weight",
                            "out.2.weight") if k not in sd]
    if missing:
        refuse(f"not a guided-diffusion UNet state dict (no {missing[0]})")
    if "label_emb.weight" in sd:
        refuse("a class-conditional model; the toolkit samples with the unconditional 256x256_diffusion_uncond.pt")
    conv_in = sd["input_blocks.0.0.weight"]
    mc, in_ch = int(conv_in.shape[0]), int(conv_in.shape[1])
    out_ch = int(sd["out.2.weight"].shape[0])
    if out_ch != 2 * in_ch:
        refuse(f"{out_ch} output channels for {in_ch} input channels; the toolkit's sampler needs a learned "
               f"variance (learn_sigma: {2 * in_ch} output channels)")
    if tuple(sd["time_embed.0.weight"].shape) != (4 * mc, mc):
        refuse("its time embedding is not 4 x model_channels wide (channel_mult must start at 1)")
    if any(k.endswith(".op.weight") or re.match(r"output_blocks\.\d+\.\d+\.conv\.weight", k) for k in sd):
        refuse("it resamples by convolutions (resblock_updown=False); the toolkit's model resamples in res blocks")
    outs = _indices(sd, "output_blocks")
    ins = _indices(sd, "input_blocks")
    ups = [k for k in outs if any(f"output_blocks.{k}.{j}.in_layers.0.weight" in sd for j in (1, 2))]
    per_level = (ups[0] + 1) if ups else len(outs)
    levels = len(outs) // per_level if per_level else 0
    nrb = per_level - 1
    if (not levels or len(outs) != levels * per_level or len(ins) != 1 + levels * nrb + levels - 1 or nrb < 1
            or ups != [r * per_level + nrb for r in range(levels - 1)]):
        refuse(f"its {len(ins)} input and {len(outs)} output blocks are not an ADM UNet's")
    channels, attention = [], []
    for level in range(levels):
        first = 1 + level * per_level
        key = f"input_blocks.{first}.0.in_layers.2.weight"
        if key not in sd:
            refuse(f"no {key}")
        channels.append(int(sd[key].shape[0]))
        attention.append(f"input_blocks.{first}.1.qkv.weight" in sd)
    if channels[0] != mc:
        refuse("channel_mult must start at 1")
    emb = sd["input_blocks.1.0.emb_layers.1.weight"]
    if int(emb.shape[0]) != 2 * channels[0]:
        refuse("no scale-shift norm (use_scale_shift_norm=False); the toolkit's model has it")
    if "middle_block.1.qkv.weight" not in sd:
        refuse("no attention in its middle block")
    for level, (ch, att) in enumerate(zip(channels, attention)):
        if att and ch % head_channels:
            refuse(f"{ch} channels at level {level} do not split into heads of {head_channels}")
    if channels[-1] % head_channels:
        refuse(f"{channels[-1]} middle channels do not split into heads of {head_channels}")
    groups = 32
    if any(c % groups for c in channels):
        refuse("its channel counts are not multiples of 32 (GroupNorm32)")
    return {
        "sample_size": TOOLKIT_SIZE, "in_channels": in_ch, "out_channels": out_ch, "layers_per_block": nrb,
        "block_out_channels": tuple(channels),
        "down_block_types": tuple("AttnDownBlock2D" if a else "ResnetDownsampleBlock2D" for a in attention),
        "up_block_types": tuple("AttnUpBlock2D" if a else "ResnetUpsampleBlock2D" for a in reversed(attention)),
        "attention_head_dim": head_channels, "resnet_time_scale_shift": "scale_shift", "norm_num_groups": groups,
        "attn_norm_num_groups": groups, "norm_eps": 1e-5, "upsample_type": "resnet", "downsample_type": "resnet",
        "flip_sin_to_cos": True, "freq_shift": 0, "dropout": 0.0,
    }


def _copy(sd, pairs: Dict[str, str], out: dict, used: set) -> None:
    """Each source layer's weight and bias (those the state dict has) under its diffusers name."""
    found = {f"{a}.{p}": f"{b}.{p}" for a, b in pairs.items() for p in ("weight", "bias") if f"{a}.{p}" in sd}
    out.update({dst: sd[src] for src, dst in found.items()})
    used.update(found)


_RESNET = {"in_layers.0": "norm1", "in_layers.2": "conv1", "emb_layers.1": "time_emb_proj", "out_layers.0": "norm2",
           "out_layers.3": "conv2", "skip_connection": "conv_shortcut"}


def _resnet(sd, src: str, dst: str, out: dict, used: set) -> None:
    _copy(sd, {f"{src}.{a}": f"{dst}.{b}" for a, b in _RESNET.items()}, out, used)


def _attention(sd, src: str, dst: str, head_channels: int, out: dict, used: set) -> None:
    """guided-diffusion's legacy attention order (heads first, then q, k, v within a head) into
    diffusers' separate q, k and v projections (head-major rows)."""
    w, b = sd[f"{src}.qkv.weight"], sd[f"{src}.qkv.bias"]
    c = int(w.shape[1])
    heads = c // head_channels
    w = w.reshape(heads, 3, head_channels, c)
    b = b.reshape(heads, 3, head_channels)
    for i, name in enumerate(("to_q", "to_k", "to_v")):
        out[f"{dst}.{name}.weight"] = w[:, i].reshape(c, c)
        out[f"{dst}.{name}.bias"] = b[:, i].reshape(c)
    used.update((f"{src}.qkv.weight", f"{src}.qkv.bias"))
    _copy(sd, {f"{src}.proj_out": f"{dst}.to_out.0", f"{src}.norm": f"{dst}.group_norm"}, out, used)
    out[f"{dst}.to_out.0.weight"] = sd[f"{src}.proj_out.weight"].reshape(c, c)  # a 1x1 conv1d's, as a linear's


def _block(sd, src: str, dst_res: str, dst_att: Optional[str], heads: int, out: dict, used: set) -> None:
    _resnet(sd, f"{src}.0", dst_res, out, used)
    if dst_att is not None and f"{src}.1.qkv.weight" in sd:
        _attention(sd, f"{src}.1", dst_att, heads, out, used)


def adm_to_diffusers(sd: Dict[str, object], config: dict) -> Dict[str, object]:
    """guided-diffusion's keys renamed (and its attention split) into `UNet2DModel`'s."""
    out: Dict[str, object] = {}
    used: set = set()
    hc = config["attention_head_dim"]
    _copy(sd, {"input_blocks.0.0": "conv_in", "time_embed.0": "time_embedding.linear_1",
               "time_embed.2": "time_embedding.linear_2", "out.0": "conv_norm_out", "out.2": "conv_out"}, out, used)
    nrb, levels = config["layers_per_block"], len(config["block_out_channels"])
    k = 1
    for level in range(levels):
        for j in range(nrb):
            _block(sd, f"input_blocks.{k}", f"down_blocks.{level}.resnets.{j}",
                   f"down_blocks.{level}.attentions.{j}", hc, out, used)
            k += 1
        if level < levels - 1:
            _resnet(sd, f"input_blocks.{k}.0", f"down_blocks.{level}.downsamplers.0", out, used)
            k += 1
    _resnet(sd, "middle_block.0", "mid_block.resnets.0", out, used)
    _attention(sd, "middle_block.1", "mid_block.attentions.0", hc, out, used)
    _resnet(sd, "middle_block.2", "mid_block.resnets.1", out, used)
    k = 0
    for r in range(levels):
        for j in range(nrb + 1):
            _block(sd, f"output_blocks.{k}", f"up_blocks.{r}.resnets.{j}", f"up_blocks.{r}.attentions.{j}", hc,
                   out, used)
            if j == nrb and r < levels - 1:
                at = 2 if f"output_blocks.{k}.1.qkv.weight" in sd else 1
                _resnet(sd, f"output_blocks.{k}.{at}", f"up_blocks.{r}.upsamplers.0", out, used)
            k += 1
    left = sorted(set(sd) - used)
    if left:
        raise CheckpointError(f"the guided-diffusion state dict has {len(left)} keys an ADM UNet of this shape does "
                              f"not use (first: {left[0]})")
    return out


# ---------------------------------------------------------------------------------------------
# diffusers folders and hub names

def _checked(unet, name: str) -> DiffusionWeights:
    """A diffusers UNet the toolkit's sampler can run (a learned variance, unconditional)."""
    from ..models.checkpoint import tensors_sha256
    cfg = unet.config
    if int(cfg.out_channels) != 2 * int(cfg.in_channels):
        raise CheckpointError(f"--weights {name}: {cfg.out_channels} output channels for {cfg.in_channels} input "
                              f"channels; the toolkit's sampler needs a learned variance")
    if getattr(cfg, "num_class_embeds", None) or getattr(cfg, "class_embed_type", None):
        raise CheckpointError(f"--weights {name}: a class-conditional model; the toolkit's is unconditional")
    return DiffusionWeights(unet.eval(), "diffusers", tensors_sha256(unet.state_dict()),
                            int(cfg.sample_size if isinstance(cfg.sample_size, int) else cfg.sample_size[0]))


def _from_folder(path: Path, name: str) -> DiffusionWeights:
    from diffusers import UNet2DModel
    sub = "unet" if (path / "unet" / "config.json").is_file() else None
    if not (path / (sub or ".") / "config.json").is_file():
        raise CheckpointError(f"--weights {name}: a folder without a diffusers config.json (nor unet/config.json)")
    try:
        unet = UNet2DModel.from_pretrained(str(path), subfolder=sub, local_files_only=True)
    except Exception as e:  # diffusers raises OSError, ValueError or EnvironmentError for a bad folder
        raise CheckpointError(f"--weights {name}: not a diffusers UNet2DModel folder "
                              f"({type(e).__name__}: {' '.join(str(e).split())[:160]})") from None
    return _checked(unet, name)


def _hub_unet(name: str, local: bool):
    """The hub repository's UNet2DModel: at its root, or a pipeline's `unet/`."""
    from diffusers import UNet2DModel
    try:
        return UNet2DModel.from_pretrained(name, local_files_only=local)
    except Exception:  # a pipeline repository keeps its network in unet/
        return UNet2DModel.from_pretrained(name, subfolder="unet", local_files_only=local)


def _from_hub(name: str) -> DiffusionWeights:
    from ..models.hub import offline_reason
    try:
        unet = _hub_unet(name, local=True)
    except Exception:  # not in the cache: a download, if the hub can be reached
        why = offline_reason()
        if why:
            raise CheckpointError(f"--weights {name}: a hub name, not in the local cache, and no download can "
                                  f"start ({why}); give a file or folder") from None
        try:
            unet = _hub_unet(name, local=False)
        except Exception as e:  # the hub client raises many kinds (HTTP, repository, config errors)
            raise CheckpointError(f"--weights {name}: cannot load it from the hub "
                                  f"({type(e).__name__}: {' '.join(str(e).split())[:160]})") from None
    return _checked(unet, name)

