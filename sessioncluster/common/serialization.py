"""PyFlink's ``Encoder``, ``SimpleStringSchema`` and ``ByteArraySchema``
(``pyflink.common.serialization``)."""

from __future__ import annotations

import copy
from typing import Any

from .typeinfo import TypeInformation, java_string


class Encoder:
    """How a row-format FileSink writes a record: ``simple_string_encoder`` writes the record's
    text and a newline, in ``charset_name``. The text is Java's ``toString`` of the stream's
    declared type (:func:`~sessioncluster.common.typeinfo.java_string`: ``(a,1)``, ``+I[a, 1]``,
    ``1.0E7``), which the sink learns when it is attached (:meth:`of_record_type`); Python's
    ``str`` for a stream of no declared type."""

    def __init__(self, charset_name: str = "UTF-8", record_type: TypeInformation | None = None) -> None:
        self.charset_name = charset_name
        self.record_type = record_type

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> "Encoder":
        return Encoder(charset_name)

    def of_record_type(self, record_type: TypeInformation | None) -> "Encoder":
        """This encoder for records of the declared type ``record_type`` (a copy)."""
        encoder = copy.copy(self)
        encoder.record_type = record_type
        return encoder

    def encode(self, record: Any) -> bytes:
        return (java_string(record, self.record_type) + "\n").encode(self.charset_name)

    def __repr__(self) -> str:
        return f"Encoder.simple_string_encoder({self.charset_name!r})"


class BulkWriter:
    """Flink's ``BulkWriter``: ``add_element`` per record, ``flush`` to push what is buffered to
    the stream, ``finish`` to write the rest and the footer (it does not close the stream)."""

    def add_element(self, element: Any) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        raise NotImplementedError


class BulkWriterFactory:
    """Makes a bulk writer for each part file of a bulk-format FileSink (PyFlink's
    ``BulkWriterFactory``, Flink's ``BulkWriter.Factory``): ``create(stream)`` returns a
    :class:`BulkWriter` of one part file; the sink closes ``stream`` after ``finish``."""

    def create(self, stream: Any) -> BulkWriter:
        raise NotImplementedError


class SerializationSchema:
    """Turns a record into bytes."""

    def serialize(self, element: Any) -> bytes:
        raise NotImplementedError


class DeserializationSchema:
    """Turns bytes into a record."""

    def deserialize(self, message: bytes) -> Any:
        raise NotImplementedError


class SimpleStringSchema(SerializationSchema, DeserializationSchema):
    """Strings as bytes in ``charset``."""

    def __init__(self, charset: str = "UTF-8") -> None:
        self.charset = charset

    def serialize(self, element: Any) -> bytes:
        return str(element).encode(self.charset)

    def deserialize(self, message: bytes) -> str:
        return message.decode(self.charset)


class ByteArraySchema(SerializationSchema, DeserializationSchema):
    """Bytes as they are."""

    def serialize(self, element: Any) -> bytes:
        return bytes(element)

    def deserialize(self, message: bytes) -> bytes:
        return bytes(message)
