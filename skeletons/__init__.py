"""MindSpore ``nn.Cell`` starters generated from the repository's ``nn.Module`` classes."""
