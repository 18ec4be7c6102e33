import numpy as np
import torch
import torch.nn as nn

from . import F
from .boxes import assign
from .layers import Backbone


class Head(nn.Module):
    def __init__(self, width=16, num_classes=10):
        super().__init__()
        self.fc = nn.Linear(width, num_classes)
        self.dropout = nn.Dropout(p=0.2)

    def forward(self, x):
        pooled = F.adaptive_avg_pool2d(x, 1).flatten(1)
        logits = self.fc(self.dropout(pooled))
        positives = logits[logits > 0]
        if positives.sum() > 0:
            print("positive logits:", positives.shape)
        return logits, assign(torch.sigmoid(logits))


class TinyNet(nn.Module):
    def __init__(self, width=16, num_classes=10):
        super().__init__()
        self.backbone = Backbone(width)
        self.head = Head(width, num_classes)

    def forward(self, x):
        features = self.backbone(x)
        logits, scores = self.head(features)
        stats = np.mean(features.detach().cpu().numpy())
        return F.log_softmax(logits, dim=1), scores, stats
