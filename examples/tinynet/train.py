import argparse

import torch
from torch.cuda.amp import GradScaler, autocast

from tinynet import TinyNet
from tinynet.data import loader
from tinynet.penalty import gradient_penalty


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TinyNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9,
                                nesterov=True, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    scaler = GradScaler()
    for epoch in range(args.epochs):
        model.train()
        for images, tags in loader(args.batch_size):
            images = images.to(device)
            optimizer.zero_grad()
            with autocast():
                log_probs, _, _ = model(images)
                loss = -log_probs[:, 0].mean()
                loss = loss + 10.0 * gradient_penalty(model, images, images.flip(0))
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
            scaler.step(optimizer)
            scaler.update()
        scheduler.step()
        print(f"epoch {epoch}: loss {loss.item():.3f}")
    torch.save(model.state_dict(), "tinynet.pth")


if __name__ == "__main__":
    main()
