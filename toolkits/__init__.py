"""Toolkits around the attribution agents: benchmark loading, evidence retrieval, runners, metrics.

Modules are imported explicitly (``from toolkits.bench_utils import load_memtracebench``); this
package imports nothing on its own so that loading one toolkit never pulls in the others.
"""
