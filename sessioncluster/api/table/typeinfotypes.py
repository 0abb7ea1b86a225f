"""DataTypes of DataStream ``TypeInformation`` (``from_type_info``) and the row type a format
takes (``row_type_of``: a ROW DataType or a ``Types.ROW_NAMED``)."""

from __future__ import annotations

from typing import Any, Callable

from ...common.typeinfo import (
    BasicArrayTypeInfo,
    BasicTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    RowTypeInfo,
    SqlTimeTypeInfo,
    TypeInformation,
    Types,
)
from .types import DataType, DataTypes, RowType

_Factory = Callable[[], DataType]
_BASIC: dict[str, _Factory] = {
    "String": DataTypes.STRING, "Byte": DataTypes.TINYINT, "Boolean": DataTypes.BOOLEAN,
    "Short": DataTypes.SMALLINT, "Integer": DataTypes.INT, "Long": DataTypes.BIGINT,
          "Float": DataTypes.FLOAT, "Double": DataTypes.DOUBLE, "Character": DataTypes.STRING,
          "Instant": DataTypes.TIMESTAMP_LTZ}
_TIME: dict[str, _Factory] = {"Date": DataTypes.DATE, "Time": DataTypes.TIME,
                              "Timestamp": DataTypes.TIMESTAMP}


def from_type_info(type_info: TypeInformation) -> DataType:
    """The DataType of a DataStream ``TypeInformation`` (``Types.ROW_NAMED`` -> ROW)."""
    if isinstance(type_info, RowTypeInfo):
        return DataTypes.ROW([DataTypes.FIELD(n, from_type_info(t)) for n, t in
                              zip(type_info.get_field_names(), type_info.get_field_types())])
    if isinstance(type_info, ListTypeInfo):
        return DataTypes.ARRAY(from_type_info(type_info.element_type))
    if isinstance(type_info, BasicArrayTypeInfo):
        if type_info.element_type == Types.BYTE():
            return DataTypes.BYTES()
        return DataTypes.ARRAY(from_type_info(type_info.element_type))
    if isinstance(type_info, MapTypeInfo):
        return DataTypes.MAP(from_type_info(type_info.key_type), from_type_info(type_info.value_type))
    if isinstance(type_info, SqlTimeTypeInfo):
        return _TIME[type_info.name]()
    if isinstance(type_info, BasicTypeInfo):
        if type_info.name == "BigDecimal":
            return DataTypes.DECIMAL(38, 18)
        if type_info.name in _BASIC:
            return _BASIC[type_info.name]()
    raise TypeError(f"{type_info!r} has no Table API data type")


def row_type_of(type_or_info: Any) -> RowType:
    """A ROW DataType from a RowType or a ``Types.ROW_NAMED`` (what the formats take)."""
    if isinstance(type_or_info, RowType):
        return type_or_info
    if isinstance(type_or_info, RowTypeInfo):
        return from_type_info(type_or_info)  # type: ignore[return-value]
    raise TypeError(f"expected a row type (DataTypes.ROW([...]) or Types.ROW_NAMED(...)), not "
                    f"{type_or_info!r}")
