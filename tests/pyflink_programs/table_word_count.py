# A Table API word count in the shape of PyFlink's "Table API Tutorial" and its word_count example:
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/python/table_api_tutorial/
# (lines from from_elements, split into words by a SQL query with UNNEST, counted with
# group_by().select(...count)).
from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment
from pyflink.table.expressions import col, lit

LINES = ["to be or not to be", "that is the question", "to sleep perchance to dream"]


def word_count():
    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "1")

    lines = t_env.from_elements([(line,) for line in LINES],
                                DataTypes.ROW([DataTypes.FIELD("line", DataTypes.STRING())]))
    t_env.create_temporary_view("lines", lines)
    words = t_env.sql_query(
        "SELECT word FROM lines CROSS JOIN UNNEST(SPLIT(line, ' ')) AS T(word)")
    result = words.group_by(col("word")).select(col("word"), lit(1).count.alias("cnt"))
    result.execute().print()


if __name__ == "__main__":
    word_count()
