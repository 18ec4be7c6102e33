"""msready: how ready is a PyTorch repository to move to MindSpore."""

__version__ = "0.1.0"
