"""tinynet: a small classifier with a detection-style head."""

from torch.nn import functional as F  # re-exported for the model code

from .model import TinyNet

__all__ = ["F", "TinyNet"]
