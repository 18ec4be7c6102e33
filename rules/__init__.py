"""Rule families: one module per hazard family, each rule a small class."""
