"""The closed loop: turn attributions into better memory-system prompts and parameters.

Modules are imported explicitly (``from toolkits.optimization.bundle import MemoryConfigBundle``);
this package imports nothing on its own, like :mod:`toolkits`.
"""
