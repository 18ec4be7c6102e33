import torch


def match(scores, threshold):
    # Which anchors fire: the number of rows depends on the data.
    keep = torch.nonzero(scores > threshold)
    return keep[:, 0]


def assign(scores, threshold=0.5):
    idx = match(scores, threshold)
    k = int(idx.numel())
    top = torch.topk(scores.flatten(), k)
    return top.values
