"""Types shared by the DataStream API and PyFlink's ``pyflink.common`` names."""

from .configuration import Configuration
from .execution_mode import RuntimeExecutionMode
from .serialization import Encoder, SimpleStringSchema
from .time import Duration, Time
from .typeinfo import TypeInformation, Types
from .types import Row, RowKind

__all__ = ["Configuration", "Duration", "Encoder", "Row", "RowKind", "RuntimeExecutionMode",
           "SimpleStringSchema", "Time", "TypeInformation", "Types"]
