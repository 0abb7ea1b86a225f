# Session window aggregation with the SESSION window TVF, as Flink's "Window Aggregation" page:
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/table/sql/queries/window-agg/
# On the Bid table of that page, written by the program as a CSV file into a temporary directory and
# declared with the filesystem connector and a WATERMARK, in STREAMING mode: Flink 2.3 runs no
# session window in BATCH mode (the TVF: "Unaligned windows like session are not supported in
# batch mode yet."; the legacy GROUP BY SESSION: "Window SessionGroupWindow(...) is not supported
# right now."). The bounded file ends with Flink's final watermark, which fires every session.
import os
import tempfile

from pyflink.table import EnvironmentSettings, TableEnvironment

BIDS = [
    ("2020-04-15 08:05:00", "4.00", "C", "supplier1"),
    ("2020-04-15 08:07:00", "2.00", "A", "supplier1"),
    ("2020-04-15 08:09:00", "5.00", "D", "supplier2"),
    ("2020-04-15 08:11:00", "3.00", "B", "supplier2"),
    ("2020-04-15 08:13:00", "1.00", "E", "supplier1"),
    ("2020-04-15 08:17:00", "6.00", "F", "supplier2"),
]


def create_bid_table(t_env, work_dir):
    path = os.path.join(work_dir, "bids")
    os.makedirs(path)
    with open(os.path.join(path, "bids.csv"), "w") as f:
        f.writelines(",".join(bid) + "\n" for bid in BIDS)
    t_env.execute_sql(f"""
        CREATE TABLE Bid (
            bidtime TIMESTAMP(3),
            price DECIMAL(10, 2),
            item STRING,
            supplier_id STRING,
            WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND
        ) WITH (
            'connector' = 'filesystem',
            'path' = '{path}',
            'format' = 'csv'
        )""")


def main(work_dir):
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    create_bid_table(t_env, work_dir)
    t_env.execute_sql("""
        SELECT window_start, window_end, supplier_id, SUM(price) AS total_price, COUNT(*) AS bids
        FROM TABLE(SESSION(TABLE Bid PARTITION BY supplier_id, DESCRIPTOR(bidtime),
                           INTERVAL '2' MINUTES))
        GROUP BY window_start, window_end, supplier_id""").print()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(tmp)
