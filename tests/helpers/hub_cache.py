"""A Hugging Face cache written by hand, as `hf download` leaves it, so that timm's published-weights
path (`timm:ARCH.TAG`, `timm.create_model(..., pretrained=True)`) runs offline in the tests.

The layout (huggingface_hub's cache, one repository):

    HF_HOME/hub/models--timm--<arch>.<tag>/snapshots/<revision>/model.safetensors
    HF_HOME/hub/models--timm--<arch>.<tag>/refs/main        (holds <revision>)

`test_resnet.r160_in1k` is timm's tiny ResNet with a real pretrained config (160-px inputs, bilinear,
mean = std = 0.5, 1000 classes): the stand-in for `resnet50.a1_in1k` in every README and manual line.
"""
import hashlib
import os
from pathlib import Path

#: The tag every test loads: a real timm tag whose network is small enough for a CPU test.
TAG = "test_resnet.r160_in1k"
#: What it stands in for in the README's and the manual's commands.
STAND_INS = {"timm:resnet50.a1_in1k": f"timm:{TAG}"}
REVISION = "0123456789abcdef0123456789abcdef01234567"


def write_timm_weights(hf_home: Path, tag: str = TAG, seed: int = 1):
    """Seeded random weights for `tag`'s architecture, saved where the hub cache keeps them; returns
    (the safetensors file, its state dict). The weights are not timm's real ones: a test that
    compares outputs must see these very tensors, not merely some trained network."""
    import safetensors.torch
    import timm
    import torch
    arch = tag.split(".")[0]
    net = timm.create_model(arch, pretrained=False)
    gen = torch.Generator().manual_seed(seed)
    learned = {name for name, _ in net.named_parameters()}  # BatchNorm's statistics keep their defaults
    state = {k: (torch.randn(v.shape, generator=gen) * 0.1 if k in learned else v).contiguous()
             for k, v in net.state_dict().items()}
    repo = Path(hf_home) / "hub" / f"models--timm--{tag}"
    snapshot = repo / "snapshots" / REVISION
    snapshot.mkdir(parents=True, exist_ok=True)
    path = snapshot / "model.safetensors"
    safetensors.torch.save_file(state, str(path))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(REVISION)
    return path, state


def tag_network(state, tag: str = TAG):
    """`tag`'s timm architecture holding `state` (what `write_timm_weights` returned), in eval mode:
    the plain network a test's oracle runs, built without bgbench."""
    import timm
    net = timm.create_model(tag.split(".")[0], pretrained=False)
    net.load_state_dict(state)
    return net.eval()


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def use_offline_hub(monkeypatch, hf_home: Path) -> dict:
    """Point this process (huggingface_hub reads its settings at import) and its children at the
    cache in `hf_home`, offline; returns the environment for subprocesses."""
    import huggingface_hub.constants as constants
    hub = str(Path(hf_home) / "hub")
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HOME", str(hf_home))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", hub)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"}
