"""Every checkpoint format, the robustness-library layout, and the trust boundary."""
import pytest
import timm
import torch
from torch import nn

from bgbench.errors import CheckpointError
from bgbench.models import create_model
from bgbench.models.spec import IN9_MEAN, IN9_STD, BgModel, ModelSpec
from bgbench.models.checkpoint import save_checkpoint


def _x(seed=0, size=64):
    return torch.rand(2, 3, size, size, generator=torch.Generator().manual_seed(seed))


def _in9_reference(net, x):
    mean = torch.tensor(IN9_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IN9_STD).view(1, 3, 1, 1)
    with torch.no_grad():
        return net.eval()((x - mean) / std)


def robustness_checkpoint(net: nn.Module, path, with_attacker=True, key="model"):
    """A checkpoint laid out like the robustness library's (what upstream's IN-9L model uses)."""
    sd = {}
    for k, v in net.state_dict().items():
        sd[f"module.model.{k}"] = v
        if with_attacker:
            sd[f"module.attacker.model.{k}"] = v
    sd["module.normalizer.new_mean"] = torch.tensor(IN9_MEAN).view(3, 1, 1)
    sd["module.normalizer.new_std"] = torch.tensor(IN9_STD).view(3, 1, 1)
    if with_attacker:
        sd["module.attacker.normalizer.new_mean"] = sd["module.normalizer.new_mean"]
        sd["module.attacker.normalizer.new_std"] = sd["module.normalizer.new_std"]
    torch.save({key: sd, "epoch": 17}, path)


def test_robustness_resnet18_matches_plain_timm_with_in9_normalization(tmp_path):
    torch.manual_seed(0)
    ref = timm.create_model("resnet18", num_classes=9).eval()
    robustness_checkpoint(ref, tmp_path / "x.pt")
    model = create_model("timm:resnet18", checkpoint=str(tmp_path / "x.pt"))
    x = _x()
    with torch.no_grad():
        got = model(x)
    assert model.spec.num_classes == 9
    assert torch.allclose(got, _in9_reference(ref, x), atol=1e-5)


def test_robustness_state_dict_key_and_no_attacker(tmp_path):
    ref = timm.create_model("resnet18", num_classes=9).eval()
    robustness_checkpoint(ref, tmp_path / "x.pt", with_attacker=False, key="state_dict")
    model = create_model("timm:resnet18", checkpoint=str(tmp_path / "x.pt"))
    x = _x(1)
    with torch.no_grad():
        assert torch.allclose(model(x), _in9_reference(ref, x), atol=1e-5)


def test_plain_state_dict_infers_classes_from_the_head(tmp_path):
    ref = timm.create_model("test_resnet", num_classes=5).eval()
    torch.save(ref.state_dict(), tmp_path / "sd.pt")
    model = create_model("timm:test_resnet", checkpoint=str(tmp_path / "sd.pt"))
    assert model.spec.num_classes == 5
    x = _x(2)
    with torch.no_grad():
        assert torch.allclose(model(x), _in9_reference(ref, x), atol=1e-5)


def test_1000_class_state_dict_gets_imagenet_normalization(tmp_path):
    ref = timm.create_model("test_resnet", num_classes=1000)
    torch.save(ref.state_dict(), tmp_path / "sd.pt")
    model = create_model("timm:test_resnet", checkpoint=str(tmp_path / "sd.pt"))
    assert model.spec.label_space == "imagenet1k"
    assert model.spec.mean == tuple(ref.pretrained_cfg["mean"])


def test_bgbench_checkpoint_round_trips_its_spec(tmp_path):
    net = timm.create_model("test_resnet", num_classes=3)
    spec = ModelSpec(name="timm:test_resnet", arch="test_resnet", num_classes=3, class_names=("a", "b", "c"),
                     input_size=(3, 32, 32))
    save_checkpoint(BgModel(net, spec), tmp_path / "m.pt", epoch=1)
    model = create_model(f"file:{tmp_path / 'm.pt'}")
    assert model.spec.class_names == ("a", "b", "c") and model.spec.input_size == (3, 32, 32)
    assert len(model.spec.checkpoint_sha256) == 64


def test_an_exported_program_of_a_whole_bgmodel(tmp_path):
    """A program exported from a BgModel holds its normalization: read with --norm none, it gives
    the wrapped model's logits. (TorchScript, PyTorch's deprecated format, is read in
    test_model_files.py.)"""
    ref = timm.create_model("test_resnet", num_classes=9).eval()
    wrapped = BgModel(ref, ModelSpec(name="x", arch="test_resnet", num_classes=9)).eval()
    torch.export.save(torch.export.export(wrapped, (_x(0, 32),)), str(tmp_path / "m.pt2"))  # a batch of 2, fixed
    model = create_model(f"file:{tmp_path / 'm.pt2'}", norm="none")
    x = torch.cat([_x(3, 32), _x(4, 32)[:1]])  # 3 images: run as 2 + 1 padded
    with torch.no_grad():
        assert torch.allclose(model(x), wrapped(x), atol=1e-5)
    assert model.spec.arch == "export" and model.spec.num_classes == 9 and model.format == "export"


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.fc = nn.Linear(4, 9)

    def forward(self, x):
        return self.fc(self.conv(x).mean((2, 3)))


def test_pickled_model_needs_trust(tmp_path):
    torch.save(TinyNet(), tmp_path / "whole.pt")
    with pytest.raises(CheckpointError, match="--trust-checkpoint"):
        create_model(f"file:{tmp_path / 'whole.pt'}")
    model = create_model(f"file:{tmp_path / 'whole.pt'}", trust_checkpoint=True)
    assert model.spec.arch == "pickled" and model.spec.num_classes == 9


def test_checkpoint_that_does_not_fit_names_the_mismatch(tmp_path):
    torch.save(timm.create_model("test_resnet", num_classes=9).state_dict(), tmp_path / "sd.pt")
    with pytest.raises(CheckpointError, match="does not fit timm:resnet18") as e:
        create_model("timm:resnet18", checkpoint=str(tmp_path / "sd.pt"))
    assert str(tmp_path / "sd.pt") in str(e.value)  # the error names the file


def test_bare_weights_under_file_scheme_ask_for_an_architecture(tmp_path):
    torch.save(timm.create_model("test_resnet", num_classes=9).state_dict(), tmp_path / "sd.pt")
    with pytest.raises(CheckpointError, match="--model timm:ARCH"):
        create_model(f"file:{tmp_path / 'sd.pt'}")


def test_missing_and_garbage_checkpoints(tmp_path):
    with pytest.raises(CheckpointError, match="not found"):
        create_model("timm:test_resnet", checkpoint=str(tmp_path / "nope.pt"))
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError):
        create_model("timm:test_resnet", checkpoint=str(tmp_path / "junk.pt"))
