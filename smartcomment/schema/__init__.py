"""Schema records of the execution graph (variables, operations, edges, sessions)."""

from smartcomment.schema.operation import OpEdge, OpRecord
from smartcomment.schema.session import Session
from smartcomment.schema.variable import Variable

__all__ = ["OpEdge", "OpRecord", "Session", "Variable"]
