# A Python table aggregate function (Top 2 per key) with flat_aggregate, as PyFlink's
# "General User-defined Functions" page, "Table Aggregate Functions":
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/python/table/udfs/python_udfs/
# In STREAMING mode (Flink 2.3 plans no table aggregate in BATCH: "There are not enough rules to
# produce a node"); the result is a changelog, read with to_pandas(), which applies it.
from pyflink.common import Row
from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment
from pyflink.table.expressions import col
from pyflink.table.udf import TableAggregateFunction, udtaf


class Top2(TableAggregateFunction):

    def emit_value(self, accumulator):
        yield Row(accumulator[0])
        yield Row(accumulator[1])

    def create_accumulator(self):
        return [None, None]

    def accumulate(self, accumulator, row):
        if row.a is not None:
            if accumulator[0] is None or row.a > accumulator[0]:
                accumulator[1] = accumulator[0]
                accumulator[0] = row.a
            elif accumulator[1] is None or row.a > accumulator[1]:
                accumulator[1] = row.a

    def get_accumulator_type(self):
        return DataTypes.ARRAY(DataTypes.BIGINT())

    def get_result_type(self):
        return DataTypes.ROW([DataTypes.FIELD("a", DataTypes.BIGINT())])


def main(settings):
    t_env = TableEnvironment.create(settings)
    t_env.get_config().set("parallelism.default", "1")
    top2 = udtaf(Top2())
    t = t_env.from_elements([(1, "Hi", "Hello"), (3, "Hi", "hi"), (5, "Hi2", "hi"),
                             (7, "Hi", "Hello"), (2, "Hi", "Hello")], ["a", "b", "c"])
    result = t.group_by(col("b")).flat_aggregate(top2).select(col("*"))
    rows = [(b, None if a != a or a is None else int(a))  # a null is NaN in pandas
            for b, a in result.to_pandas().itertuples(index=False)]
    for row in sorted(rows, key=str):
        print(row)


if __name__ == "__main__":
    main(EnvironmentSettings.in_streaming_mode())
