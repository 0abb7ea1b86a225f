# A regular join, a left outer join and an interval join, as Flink's "Joins" page:
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/table/sql/queries/joins/
# Orders, Products and Shipments written by the program as CSV files into a temporary directory
# (filesystem connector; a WATERMARK on the time columns of the interval join), in BATCH mode.
import os
import tempfile

from pyflink.table import EnvironmentSettings, TableEnvironment

ORDERS = [
    (1, "p1", 2, "2024-05-01 09:00:00"),
    (2, "p2", 1, "2024-05-01 09:30:00"),
    (3, "p1", 5, "2024-05-01 10:00:00"),
    (4, "p9", 1, "2024-05-01 11:00:00"),
]
PRODUCTS = [("p1", "apple", 3), ("p2", "pear", 4), ("p3", "plum", 5)]
SHIPMENTS = [
    (100, 1, "2024-05-01 12:00:00"),  # 3 hours after order 1
    (101, 2, "2024-05-01 15:00:00"),  # 5.5 hours after order 2: outside the interval
    (102, 3, "2024-05-01 10:30:00"),
]


def create_table(t_env, work_dir, name, columns, rows):
    path = os.path.join(work_dir, name)
    os.makedirs(path)
    with open(os.path.join(path, f"{name}.csv"), "w") as f:
        f.writelines(",".join(map(str, row)) + "\n" for row in rows)
    t_env.execute_sql(f"""
        CREATE TABLE {name} ({columns}) WITH (
            'connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')""")


def main(work_dir):
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "1")
    create_table(t_env, work_dir, "Orders",
                 "order_id INT, product_id STRING, quantity INT, order_time TIMESTAMP(3), "
                 "WATERMARK FOR order_time AS order_time - INTERVAL '5' SECOND", ORDERS)
    create_table(t_env, work_dir, "Products", "product_id STRING, name STRING, price INT",
                 PRODUCTS)
    create_table(t_env, work_dir, "Shipments",
                 "ship_id INT, order_id INT, ship_time TIMESTAMP(3), "
                 "WATERMARK FOR ship_time AS ship_time - INTERVAL '5' SECOND", SHIPMENTS)
    # regular inner join
    t_env.execute_sql("""
        SELECT o.order_id, p.name, o.quantity * p.price AS total
        FROM Orders AS o
        INNER JOIN Products AS p ON o.product_id = p.product_id""").print()
    # left outer join: order 4 has no product
    t_env.execute_sql("""
        SELECT o.order_id, o.product_id, p.name
        FROM Orders AS o
        LEFT JOIN Products AS p ON o.product_id = p.product_id""").print()
    # interval join: orders shipped within four hours
    t_env.execute_sql("""
        SELECT o.order_id, s.ship_id, s.ship_time
        FROM Orders o, Shipments s
        WHERE o.order_id = s.order_id
        AND o.order_time BETWEEN s.ship_time - INTERVAL '4' HOUR AND s.ship_time""").print()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(tmp)
