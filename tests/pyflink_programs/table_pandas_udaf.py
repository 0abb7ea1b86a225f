# A vectorized (pandas) aggregate function in a group aggregation, as PyFlink's "Vectorized
# User-defined Functions" page: https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/python/table/udfs/vectorized_python_udfs/
# The function gets each group's column as a pandas.Series and returns one value.
from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment
from pyflink.table.expressions import col
from pyflink.table.udf import udaf


@udaf(result_type=DataTypes.FLOAT(), func_type="pandas")
def mean_udaf(v):
    return v.mean()


def main():
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "1")
    orders = t_env.from_elements(
        [("apple", 1, 2.0), ("pear", 2, 4.0), ("apple", 3, 5.0), ("plum", 4, 8.0),
         ("pear", 5, 1.0), ("apple", 6, 8.0)],
        DataTypes.ROW([DataTypes.FIELD("item", DataTypes.STRING()),
                       DataTypes.FIELD("id", DataTypes.INT()),
                       DataTypes.FIELD("price", DataTypes.FLOAT())]))
    orders.group_by(col("item")) \
        .select(col("item"), mean_udaf(col("price")).alias("mean_price")) \
        .execute().print()
    t_env.create_temporary_system_function("mean_udaf", mean_udaf)
    t_env.create_temporary_view("orders", orders)
    # (Flink plans no Python UDAF together with a built-in aggregate in one GROUP BY)
    t_env.execute_sql("SELECT item, mean_udaf(price) AS mean_price FROM orders "
                      "WHERE id > 1 GROUP BY item").print()


if __name__ == "__main__":
    main()
