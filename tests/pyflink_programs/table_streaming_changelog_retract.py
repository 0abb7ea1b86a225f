# The changelog a streaming group aggregation emits over a bounded source for LISTAGG(DISTINCT),
# for LISTAGG, FIRST_VALUE and LAST_VALUE over another aggregation's changelog (Flink's retract
# variants: a -U takes its value out of the list, the earliest equal one), and over a Python
# table function joined with JOIN LATERAL .. ON TRUE (PyFlink's "Table Functions" page, Flink's
# "System (Built-in) Functions", "Group Aggregation" and "Joins" pages):
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/table/functions/systemfunctions/
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/table/sql/queries/group-agg/
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/python/table/udfs/python_udfs/
# An aggregate its reader does not use is pruned (a GROUP BY of keys only: +I per new key); a
# SUM of a Python function's INT is an INT.
from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment
from pyflink.table.udf import udf, udtf

ORDERS = [(1, "apple", 3), (2, "pear", 5), (3, "apple", 2), (4, "plum", 9), (5, "pear", 1),
          (6, "apple", 3), (7, "kiwi", 5)]


@udtf(result_types=[DataTypes.STRING()])
def letters(word: str):
    for letter in word[:2]:
        yield letter


@udtf(result_types=[DataTypes.INT()])
def upto(n: int):
    for i in range(n % 3):
        yield i


@udf(result_type=DataTypes.INT())
def twice(x: int) -> int:
    return x * 2


def main():
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    for name, function in [("letters", letters), ("upto", upto), ("twice", twice)]:
        t_env.create_temporary_function(name, function)
    t_env.create_temporary_view(
        "orders", t_env.from_elements(ORDERS, ["order_id", "product", "amount"]))
    for sql in [
        "SELECT product, LISTAGG(DISTINCT CAST(amount AS STRING)) AS a, COUNT(*) AS n "
        "FROM orders GROUP BY product",
        "SELECT LISTAGG(DISTINCT product, ';') AS ps FROM orders WHERE amount > 1",
        "SELECT n, LISTAGG(product) AS ps, FIRST_VALUE(product) AS f, LAST_VALUE(product) AS l "
        "FROM (SELECT product, COUNT(*) AS n FROM orders GROUP BY product) GROUP BY n",
        "SELECT FIRST_VALUE(s) AS f, LAST_VALUE(s) AS l FROM "
        "(SELECT product, SUM(amount) AS s FROM orders GROUP BY product)",
        "SELECT COUNT(*) AS n, LISTAGG(product) AS ps FROM "
        "(SELECT product, MAX(amount) AS m FROM orders GROUP BY product)",
        "SELECT c, COUNT(*) AS n FROM orders JOIN LATERAL TABLE(letters(product)) AS T(c) "
        "ON TRUE GROUP BY c",
        "SELECT product, COUNT(i) AS n, LISTAGG(CAST(i AS STRING)) AS l FROM orders "
        "LEFT JOIN LATERAL TABLE(upto(order_id)) AS T(i) ON TRUE GROUP BY product",
        "SELECT product, SUM(twice(amount)) AS s FROM orders GROUP BY product",
    ]:
        t_env.execute_sql(sql).print()


if __name__ == "__main__":
    main()
