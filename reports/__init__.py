"""Reporters: each renders a finished scan result and computes nothing."""
