import torch
import torch.nn as nn


class ConvBlock(nn.Module):
    """Conv -> BatchNorm -> ReLU, the backbone's building block."""

    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels, momentum=0.01)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Backbone(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.stem = ConvBlock(3, width)
        self.stages = nn.ModuleList([ConvBlock(width, width, stride=2) for _ in range(3)])
        self.register_buffer("scale", torch.ones(1))

    def forward(self, x):
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
        return x * self.scale
