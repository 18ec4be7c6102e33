"""VALID / INVALID examples of the second-order rules: their documentation and tests."""

from __future__ import annotations

from collections.abc import Mapping

_Examples = tuple[str | Mapping[str, str], ...]

# A gradient penalty in a helper file, called from the training step in another file.
PENALTY_FILES = {
    "losses.py": """\
import torch

def gradient_penalty(critic, real, fake):
    alpha = torch.rand(real.size(0), 1, 1, 1)
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    grads = torch.autograd.grad(critic(mixed).sum(), mixed, create_graph=True)[0]
    return ((grads.flatten(1).norm(2, dim=1) - 1) ** 2).mean()
""",
    "train.py": """\
import torch
from losses import gradient_penalty

def critic_step(critic, generator, opt_d, opt_g, real, z):
    opt_d.zero_grad()
    fake = generator(z).detach()
    d_loss = critic(fake).mean() - critic(real).mean()
    d_loss = d_loss + 10 * gradient_penalty(critic, real, fake)
    d_loss.backward()
    opt_d.step()
""",
}

DOUBLE_INVALID: _Examples = (
    """\
import torch

def penalty(critic, x):
    x.requires_grad_(True)
    g = torch.autograd.grad(critic(x).sum(), x, create_graph=True)[0]
    return g.pow(2).mean()
""",
    """\
from torch.autograd import grad as torch_grad

def curvature(y, x):
    return torch_grad(y, x, None, True, True)[0]
""",
    """\
import torch.autograd as ag

def inner(loss, params, first_order):
    return ag.grad(loss, params, create_graph=not first_order)
""",
    """\
import torch

def step(model, x):
    loss = torch.sum(model(x) ** 2)
    loss.backward(create_graph=True)
""",
    """\
import torch

def newton(f, x):
    return torch.autograd.functional.hessian(f, x)
""",
    """\
from torch.func import grad

def second(f, x):
    return grad(grad(f))(x)
""",
    """\
try:
    from torch.autograd import grad
except ImportError:
    raise

def penalty(y, x):
    return grad(outputs=y, inputs=x, create_graph=True)[0].norm()
""",
    """\
import torch

def step(loss):
    torch.autograd.backward(loss, create_graph=True)
""",
)

DOUBLE_VALID: _Examples = (
    """\
import torch

def saliency(model, x):
    x.requires_grad_(True)
    return torch.autograd.grad(model(x).max(), x)[0].abs()
""",
    """\
import torch

def grads(loss, params):
    return torch.autograd.grad(loss, params, create_graph=False)
""",
    """\
import torch

def grads(loss, params):
    return torch.autograd.grad(loss, params, retain_graph=True)
""",
    """\
import torch

def grads(y, x):
    return torch.autograd.grad(y, x, None, True)
""",
    """\
import torch

def jac(f, x):
    return torch.autograd.functional.jacobian(f, x)
""",
    """\
from torch.func import grad, vmap

def per_sample(f, xs):
    return vmap(grad(f))(xs)
""",
    """\
import jax

def second(f, x):
    return jax.grad(jax.grad(f))(x)
""",
    """\
def grad(y, x, create_graph=False):
    return y - x

def use(a, b):
    return grad(a, b, create_graph=True)
""",
)

_CRITIC = """\
import torch
from torch import nn
import torch.nn.functional as F

class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.act = nn.LeakyReLU(0.2)

    def forward(self, x):
        return {head}

def penalty(critic, x):
    x.requires_grad_(True)
    g = torch.autograd.grad(critic(x).sum(), x, create_graph=True)[0]
    return {tail}

def train(real):
    critic = Critic()
    gp = penalty(critic, real)
    gp.backward()
"""

OP_INVALID: _Examples = (
    _CRITIC.format(head="F.log_softmax(self.act(self.conv(x)).flatten(1), dim=1)",
                   tail="((g.norm(2, dim=1) - 1) ** 2).mean()"),
    _CRITIC.replace("self.act = nn.LeakyReLU(0.2)", "self.act = nn.LogSoftmax(dim=1)").format(
        head="self.act(self.conv(x))", tail="g.pow(2).mean()"),
)

OP_VALID: _Examples = (
    _CRITIC.format(head="torch.tanh(self.act(self.conv(x)))", tail="g.pow(2).mean()"),
    # log_softmax applied to the gradient, after it is taken: differentiated only once.
    _CRITIC.format(head="self.act(self.conv(x))", tail="F.log_softmax(g.flatten(1), 1).mean()"),
    """\
import torch.nn.functional as F

def loss(logits, y):
    return F.nll_loss(F.log_softmax(logits, dim=1), y)
""",
)

MAML_INVALID: _Examples = (
    """\
import torch
import torch.nn.functional as F

def adapt(model, x, y, lr=0.01, steps=5):
    weights = list(model.parameters())
    for _ in range(steps):
        loss = F.cross_entropy(model.functional_forward(x, weights), y)
        grads = torch.autograd.grad(loss, weights)
        weights = [w - lr * g for w, g in zip(weights, grads)]
    return model.functional_forward(x, weights)
""",
    """\
import torch
from torch.func import functional_call

def inner(model, params, x, y, lr):
    loss = torch.nn.functional.mse_loss(functional_call(model, params, (x,)), y)
    grads = torch.autograd.grad(loss, list(params.values()), create_graph=True)
    new = {name: p - lr * g for (name, p), g in zip(params.items(), grads)}
    return functional_call(model, new, (x,))
""",
    """\
import torch

def meta(net, x, y, lr, loss_fn):
    grad = torch.autograd.grad(loss_fn(net(x), y), net.parameters())
    fast = list(map(lambda p: p[1] - lr * p[0], zip(grad, net.parameters())))
    return net(x, fast, bn_training=True)
""",
)

MAML_INVALID += (
    """\
from collections import OrderedDict

import torch

def update_parameters(loss, params, step_size, first_order=False):
    grads = torch.autograd.grad(loss, params.values(), create_graph=not first_order)
    out = OrderedDict()
    for (name, param), grad in zip(params.items(), grads):
        out[name] = param - step_size * grad
    return out
""",
)

MAML_VALID: _Examples = (
    """\
import torch

def pgd_step(model, x, y, eps, loss_fn):
    g = torch.autograd.grad(loss_fn(model(x), y), x)[0]
    x_adv = x - eps * g.sign()
    return x_adv
""",
    """\
import torch

def sgd(model, loss, lr):
    grads = torch.autograd.grad(loss, list(model.parameters()))
    with torch.no_grad():
        for p, g in zip(model.parameters(), grads):
            p -= lr * g
""",
    """\
import torch

def attack(model, x, y, eps, loss_fn):
    x.requires_grad_(True)
    g = torch.autograd.grad(loss_fn(model(x), y), x)[0]
    x_adv = x - eps * g.sign()
    return model(x_adv)
""",
    """\
import torch

def saliency(model, x):
    g = torch.autograd.grad(model(x).sum(), x)[0]
    return (x - g).abs().max()
""",
)

CALLER_INVALID: _Examples = (PENALTY_FILES,)

CALLER_VALID: _Examples = (
    {
        "losses.py": """\
import torch

def input_grad(model, x):
    return torch.autograd.grad(model(x).sum(), x)[0]
""",
        "train.py": """\
import torch
from losses import input_grad

def explain(model, x):
    return input_grad(model, x).abs()
""",
    },
    {
        "losses.py": PENALTY_FILES["losses.py"],
        "train.py": """\
import torch

def gradient_penalty(critic, real, fake):
    return torch.zeros(())

def step(critic, real, fake):
    return gradient_penalty(critic, real, fake)
""",
    },
)

BACKWARD_INVALID: _Examples = (
    PENALTY_FILES,
    """\
import torch

def step(model, x, opt):
    x.requires_grad_(True)
    loss = model(x).sum()
    g = torch.autograd.grad(loss, x, create_graph=True)[0]
    (loss + g.pow(2).sum()).backward()
    opt.step()
""",
)

BACKWARD_VALID: _Examples = (
    """\
import torch

def step(model, x, opt):
    x.requires_grad_(True)
    loss = model(x).sum()
    g = torch.autograd.grad(loss, x, retain_graph=True)[0]
    (loss + g.pow(2).sum()).backward()
    opt.step()
""",
    """\
import torch

def step(model, x, opt):
    loss = model(x).sum()
    loss.backward()
    opt.step()
    return torch.autograd.grad(model(x).sum(), x, create_graph=True)[0]
""",
)
