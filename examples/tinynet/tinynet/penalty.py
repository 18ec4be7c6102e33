import torch


def gradient_penalty(critic, real, fake):
    alpha = torch.rand(real.size(0), 1, 1, 1)
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    out, _, _ = critic(mixed)
    grads = torch.autograd.grad(out.sum(), mixed, create_graph=True)[0]
    return ((grads.flatten(1).norm(2, dim=1) - 1) ** 2).mean()
