"""PyFlink's ``Encoder``, ``SimpleStringSchema`` and ``ByteArraySchema``
(``pyflink.common.serialization``)."""

from __future__ import annotations

from typing import Any


class Encoder:
    """How a row-format FileSink writes a record: ``simple_string_encoder`` writes ``str(record)``
    and a newline, in ``charset_name``."""

    def __init__(self, charset_name: str = "UTF-8") -> None:
        self.charset_name = charset_name

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> "Encoder":
        return Encoder(charset_name)

    def encode(self, record: Any) -> bytes:
        return (str(record) + "\n").encode(self.charset_name)

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
