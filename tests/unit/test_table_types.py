"""pyflink.table.types: DataTypes as PyFlink builds them, and their conversions."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sessioncluster.api.table.typeinfotypes import from_type_info, row_type_of
from sessioncluster.pyflink.common import Types
from sessioncluster.pyflink.table import DataTypes
from sessioncluster.pyflink.table.types import IntType, RowType


def test_row_type_fields_and_nullability() -> None:
    t = DataTypes.ROW([DataTypes.FIELD("id", DataTypes.INT().not_null()),
                       DataTypes.FIELD("tags", DataTypes.ARRAY(DataTypes.STRING())),
                       DataTypes.FIELD("price", DataTypes.DECIMAL(10, 2))])
    assert isinstance(t, RowType) and t.field_names() == ["id", "tags", "price"]
    assert t["id"].data_type == IntType(nullable=False) and not t[0].data_type.is_nullable
    assert DataTypes.INT().not_null().nullable() == DataTypes.INT()
    assert str(t) == "ROW<`id` INT NOT NULL, `tags` ARRAY<STRING>, `price` DECIMAL(10, 2)>"
    assert repr(DataTypes.INT()) == "IntType(true)"
    with pytest.raises(ValueError, match="unique"):
        DataTypes.ROW([DataTypes.FIELD("a", DataTypes.INT()), DataTypes.FIELD("a", DataTypes.INT())])
    with pytest.raises(TypeError, match="DataTypes"):
        DataTypes.ARRAY(int)  # type: ignore[arg-type]


def test_to_arrow_and_spark() -> None:
    t = DataTypes.ROW([DataTypes.FIELD("a", DataTypes.BIGINT().not_null()),
                       DataTypes.FIELD("ts", DataTypes.TIMESTAMP(3)),
                       DataTypes.FIELD("m", DataTypes.MAP(DataTypes.STRING(), DataTypes.DOUBLE())),
                       DataTypes.FIELD("d", DataTypes.DATE())])
    assert t.arrow_schema() == pa.schema([pa.field("a", pa.int64(), nullable=False),
                                          pa.field("ts", pa.timestamp("ms")),
                                          pa.field("m", pa.map_(pa.string(), pa.float64())),
                                          pa.field("d", pa.date32())])
    assert t.spark_schema() == ("`a` BIGINT NOT NULL, `ts` TIMESTAMP_NTZ, `m` MAP<STRING, DOUBLE>, "
                                "`d` DATE")
    assert DataTypes.TIMESTAMP_LTZ(6).to_arrow() == pa.timestamp("us", tz="UTC")


def test_row_named_round_trip() -> None:
    info = Types.ROW_NAMED(["w", "n", "xs"], [Types.STRING(), Types.LONG(), Types.LIST(Types.INT())])
    t = from_type_info(info)
    assert t == DataTypes.ROW([DataTypes.FIELD("w", DataTypes.STRING()),
                               DataTypes.FIELD("n", DataTypes.BIGINT()),
                               DataTypes.FIELD("xs", DataTypes.ARRAY(DataTypes.INT()))])
    assert t.to_type_info() == info
    assert row_type_of(info) == t and row_type_of(t) is t
    with pytest.raises(TypeError, match="row type"):
        row_type_of(Types.STRING())
