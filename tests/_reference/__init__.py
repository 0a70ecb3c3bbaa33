"""Slow, direct transcriptions kept as the oracles of differential tests."""
