# The changelog a streaming group aggregation emits over a bounded source, as PyFlink's
# "Intro to the Python Table API" and Flink's "Dynamic Tables" pages describe it:
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/python/table/intro_to_table_api/
# https://nightlies.apache.org/flink/flink-docs-stable/docs/concepts/sql/dynamic_tables/
# In STREAMING mode Flink runs the query as a streaming job even though from_elements ends:
# each word's count is +I first, then -U (the count before) and +U (the count after) for each
# further occurrence; a HAVING filters those records one by one (a +U may come without its +I).
from pyflink.table import EnvironmentSettings, TableEnvironment
from pyflink.table.expressions import col


def main():
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    words = t_env.from_elements(
        [("hello",), ("world",), ("hello",), ("flink",), ("hello",), ("world",)], ["word"])
    counts = words.group_by(col("word")).select(col("word"), col("word").count.alias("cnt"))
    counts.execute().print()

    t_env.create_temporary_view("words", words)
    t_env.execute_sql("SELECT word, COUNT(*) AS cnt FROM words GROUP BY word "
                      "HAVING COUNT(*) > 1").print()
    t_env.execute_sql("SELECT COUNT(*) AS total, MAX(word) AS last_word FROM words").print()

    # the same changes collected, each Row with its RowKind
    with counts.execute().collect() as results:
        for row in results:
            print((str(row.get_row_kind()), *row))


if __name__ == "__main__":
    main()
