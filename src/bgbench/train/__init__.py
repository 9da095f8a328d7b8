"""Training: the plain recipe on one variant folder."""
from .loop import TrainConfig, save_checkpoint, train

__all__ = ["TrainConfig", "save_checkpoint", "train"]
