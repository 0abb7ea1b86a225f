# A Table API tumbling window, as PyFlink's "Window Aggregation" examples of the Table API
# (examples/table/windowing/tumble_window.py) and Flink's "Table API" page, group windows:
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/table/tableapi/#group-windows
# Sensor readings written by the program as a CSV file into a temporary directory, declared with a
# WATERMARK and read with from_path, in BATCH mode.
import os
import tempfile

from pyflink.table import EnvironmentSettings, TableEnvironment
from pyflink.table.expressions import col, lit
from pyflink.table.window import Tumble

READINGS = [
    ("s1", 20, "2024-05-01 10:00:01"),
    ("s2", 11, "2024-05-01 10:00:04"),
    ("s1", 22, "2024-05-01 10:00:08"),
    ("s1", 25, "2024-05-01 10:00:12"),
    ("s2", 13, "2024-05-01 10:00:15"),
    ("s2", 17, "2024-05-01 10:00:31"),
]


def main(work_dir):
    path = os.path.join(work_dir, "readings")
    os.makedirs(path)
    with open(os.path.join(path, "readings.csv"), "w") as f:
        f.writelines(",".join(map(str, r)) + "\n" for r in READINGS)
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "1")
    t_env.execute_sql(f"""
        CREATE TABLE readings (
            sensor STRING,
            temperature INT,
            ts TIMESTAMP(3),
            WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
        ) WITH (
            'connector' = 'filesystem',
            'path' = '{path}',
            'format' = 'csv'
        )""")
    table = t_env.from_path("readings")
    result = table.window(Tumble.over(lit(10).seconds).on(col("ts")).alias("w")) \
        .group_by(col("sensor"), col("w")) \
        .select(col("sensor"), col("w").start.alias("w_start"), col("w").end.alias("w_end"),
                col("temperature").max.alias("max_temp"),
                col("temperature").count.alias("readings"))
    result.execute().print()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        main(tmp)
