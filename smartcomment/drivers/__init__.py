"""Storage backends of the execution graph."""

from smartcomment.drivers.base import GraphDriver, get_driver_class, register_driver
from smartcomment.drivers.in_memory import InMemoryGraphDriver

__all__ = ["GraphDriver", "InMemoryGraphDriver", "get_driver_class", "register_driver"]
