"""Fixtures of the resume tests: the runner tests' two-graph benchmark split."""

from tests.runner.conftest import bench_dir  # noqa: F401 - re-exported fixture
