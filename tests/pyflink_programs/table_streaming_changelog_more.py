# More of the changelog a streaming job emits over bounded sources (PyFlink's "Intro to the
# Python Table API", Flink's "Dynamic Tables", "ORDER BY clause", "LIMIT clause" and "Set
# Operations" pages):
# https://nightlies.apache.org/flink/flink-docs-stable/docs/concepts/sql/dynamic_tables/
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/table/sql/queries/orderby/
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/table/sql/queries/set-ops/
# LISTAGG, FIRST_VALUE and LAST_VALUE in a group aggregation update a key's row (-U/+U) as each
# of its rows comes, and not when the values stay as they were; ORDER BY .. LIMIT is a Top-N
# without the rank: -D of the row pushed out of the top, +I of the new one (with OFFSET, the
# ranks kept shift: -U/+U); a Top-N ranking its own GROUP BY reads the aggregation's changelog;
# INTERSECT emits a row when it has come on both sides.
from pyflink.table import EnvironmentSettings, TableEnvironment

ORDERS = [(1, "apple", 3), (2, "pear", 5), (3, "apple", 2), (4, "plum", 9), (5, "pear", 1),
          (6, "apple", 3), (7, "kiwi", 5)]
OTHER = [("apple",), ("fig",), ("pear",), ("apple",)]


def main():
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    t_env.create_temporary_view(
        "orders", t_env.from_elements(ORDERS, ["order_id", "product", "amount"]))
    t_env.create_temporary_view("other", t_env.from_elements(OTHER, ["product"]))
    for sql in [
        "SELECT product, LISTAGG(CAST(order_id AS STRING)) AS ids FROM orders GROUP BY product",
        "SELECT LISTAGG(product, ';') AS ps, COUNT(*) AS n FROM orders WHERE amount > 2",
        "SELECT product, FIRST_VALUE(amount) AS f, LAST_VALUE(amount) AS l FROM orders "
        "GROUP BY product",
        "SELECT * FROM orders ORDER BY amount DESC LIMIT 2",
        "SELECT product, amount FROM orders ORDER BY amount LIMIT 3",
        "SELECT * FROM orders ORDER BY amount DESC LIMIT 2 OFFSET 1",
        "SELECT product, SUM(amount) AS s FROM orders GROUP BY product ORDER BY s DESC LIMIT 2",
        # a Top-N ranking its own aggregation: over its changelog, as over a subquery of it
        "SELECT * FROM (SELECT product, SUM(amount) AS s, ROW_NUMBER() OVER (ORDER BY "
        "SUM(amount) DESC) AS rn FROM orders GROUP BY product HAVING COUNT(*) > 1) WHERE rn <= 2",
        "SELECT product FROM orders INTERSECT SELECT product FROM other",
    ]:
        t_env.execute_sql(sql).print()

    # the same changes collected, each Row with its RowKind
    last = t_env.sql_query("SELECT product, LAST_VALUE(order_id) AS l FROM orders "
                           "GROUP BY product")
    with last.execute().collect() as results:
        for row in results:
            print((str(row.get_row_kind()), *row))


if __name__ == "__main__":
    main()
