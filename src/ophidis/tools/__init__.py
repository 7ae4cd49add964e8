"""Operator tools: ophidis-cli and ophidis-benchmark."""
