# OVER aggregations, as Flink's "Over Aggregation" page:
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/table/sql/queries/over-agg/
# A RANGE and a ROWS over window on an Orders table written by the program as a CSV file into a
# temporary directory (filesystem connector, WATERMARK), in BATCH mode. (The page's RANGE BETWEEN
# INTERVAL '1' HOUR PRECEDING over a TIMESTAMP(3) fails in Flink 2.3's BATCH mode: "Table program
# cannot be compiled. This is a bug." in its RangeBoundComparator; hence a running total here.)
import os
import tempfile

from pyflink.table import EnvironmentSettings, TableEnvironment

ORDERS = [
    (1, "A", 10, "2024-05-01 10:00:00"),
    (2, "A", 20, "2024-05-01 10:30:00"),
    (3, "B", 5, "2024-05-01 10:40:00"),
    (4, "A", 30, "2024-05-01 11:20:00"),
    (5, "B", 15, "2024-05-01 11:50:00"),
    (6, "A", 40, "2024-05-01 12:10:00"),
]


def main(work_dir):
    path = os.path.join(work_dir, "orders")
    os.makedirs(path)
    with open(os.path.join(path, "orders.csv"), "w") as f:
        f.writelines(",".join(map(str, order)) + "\n" for order in ORDERS)
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "1")
    t_env.execute_sql(f"""
        CREATE TABLE Orders (
            order_id INT,
            product STRING,
            amount INT,
            order_time TIMESTAMP(3),
            WATERMARK FOR order_time AS order_time - INTERVAL '1' MINUTE
        ) WITH (
            'connector' = 'filesystem',
            'path' = '{path}',
            'format' = 'csv'
        )""")
    t_env.execute_sql("""
        SELECT order_id, order_time, amount,
          SUM(amount) OVER (
            PARTITION BY product
            ORDER BY order_time
            RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
          ) AS prod_amount_sum
        FROM Orders""").print()
    t_env.execute_sql("""
        SELECT order_id, product,
          MAX(amount) OVER w AS max_of_last_two,
          COUNT(amount) OVER w AS n
        FROM Orders
        WINDOW w AS (
          PARTITION BY product
          ORDER BY order_time
          ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)""").print()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(tmp)
