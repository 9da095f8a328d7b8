"""Tiny foundation models built and saved in the tests, never downloaded: an open_clip model
(open_clip's `local-dir:` layout: open_clip_config.json plus weights) and a Hugging Face ViT
(`save_pretrained` of the model and its image processor)."""
import json
from pathlib import Path

#: A CLIP small enough for a CPU test: 2-block ViT image tower on 32-px images (8-px patches, a 4x4
#: grid), a 1-block text tower with open_clip's own tokenizer (its vocabulary ships with the package).
CLIP_CFG = {"embed_dim": 16,
            "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "patch_size": 8, "head_width": 16},
            "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


def tiny_clip(folder: Path, seed: int = 0) -> Path:
    """A randomly initialised (seeded) open_clip model saved in `folder`; returns the folder."""
    import open_clip
    import torch
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "open_clip_config.json").write_text(json.dumps(
        {"model_cfg": CLIP_CFG, "preprocess_cfg": {"mean": CLIP_MEAN, "std": CLIP_STD}}))
    torch.manual_seed(seed)
    model = open_clip.create_model(f"local-dir:{folder}")
    with torch.no_grad():  # a clearly non-default scale, so that a test can tell it was used
        model.logit_scale.fill_(torch.log(torch.tensor(37.0)))
    torch.save(model.state_dict(), folder / "open_clip_pytorch_model.bin")
    return folder


def tiny_vit(folder: Path, image_size: int = 16, num_labels: int = 9, id2label=None, seed: int = 0,
             mean=(0.5, 0.4, 0.3), std=(0.2, 0.25, 0.3)) -> Path:
    """A seeded tiny ViT classifier and its image processor, saved with `save_pretrained` in `folder`."""
    import torch
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor
    folder = Path(folder)
    kwargs = {"id2label": id2label, "label2id": {v: k for k, v in id2label.items()}} if id2label else {}
    cfg = ViTConfig(image_size=image_size, patch_size=4, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, num_labels=num_labels, **kwargs)
    torch.manual_seed(seed)
    ViTForImageClassification(cfg).save_pretrained(folder)
    ViTImageProcessor(size={"height": image_size, "width": image_size}, image_mean=list(mean),
                      image_std=list(std), resample=2).save_pretrained(folder)
    return folder
