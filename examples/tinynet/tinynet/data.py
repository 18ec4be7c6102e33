import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms


class RandomImages(Dataset):
    def __init__(self, n=64, size=32):
        self.n = n
        self.transform = transforms.Compose([
            transforms.RandomHorizontalFlip(),
            transforms.Normalize(mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5)),
        ])
        self.size = size

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        image = torch.rand(3, self.size, self.size)
        tags = torch.randint(0, 10, (1 + i % 4,))
        return self.transform(image), tags


def collate(batch):
    images = torch.stack([b[0] for b in batch])
    tags = pad_sequence([b[1] for b in batch], batch_first=True, padding_value=-1)
    return images, tags


def loader(batch_size):
    return DataLoader(RandomImages(), batch_size=batch_size, shuffle=True, collate_fn=collate)
