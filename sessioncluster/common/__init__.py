"""Types shared by the DataStream API and PyFlink's ``pyflink.common`` names."""

from .time import Duration, Time

__all__ = ["Duration", "Time"]
