"""Test helpers that speak real protocols (no mocks): the loopback LLM server."""
