# The changelog of an aggregation over an updating table and of a DISTINCT, in STREAMING over a
# bounded source, as Flink's "Dynamic Tables" page describes a query over a changelog:
# https://nightlies.apache.org/flink/flink-docs-stable/docs/concepts/sql/dynamic_tables/
# The outer aggregation reads the inner one's records: a -U retracts the row it had counted, and
# a count that goes back to 0 deletes its row (-D), inserted again (+I) when one comes back.
# SELECT DISTINCT emits a row's first occurrence only (+I); over an updating table a row goes
# (-D) when no row of its value is left. A ROLLUP expands each row into one per grouping set
# (the word's, then the total's), each aggregated record by record.
from pyflink.table import EnvironmentSettings, TableEnvironment
from pyflink.table.expressions import col


def main():
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    words = t_env.from_elements(
        [("hello",), ("world",), ("hello",), ("flink",), ("hello",), ("world",)], ["word"])
    t_env.create_temporary_view("words", words)

    # how many words have each count, as the counts change
    t_env.execute_sql("SELECT cnt, COUNT(*) AS words FROM "
                      "(SELECT word, COUNT(*) AS cnt FROM words GROUP BY word) "
                      "GROUP BY cnt").print()
    t_env.execute_sql("SELECT DISTINCT word FROM words").print()
    t_env.execute_sql("SELECT DISTINCT cnt FROM "
                      "(SELECT word, COUNT(*) AS cnt FROM words GROUP BY word)").print()

    t_env.execute_sql("SELECT word, COUNT(*) AS cnt, GROUPING(word) AS total FROM words "
                      "GROUP BY ROLLUP (word)").print()

    # the same in the Table API: a group_by of a group_by, and distinct()
    counts = words.group_by(col("word")).select(col("word"), col("word").count.alias("cnt"))
    per_count = counts.group_by(col("cnt")).select(col("cnt"), col("word").count.alias("words"))
    per_count.execute().print()
    words.distinct().execute().print()

    # the changes collected, each Row with its RowKind
    with per_count.execute().collect() as results:
        for row in results:
            print((str(row.get_row_kind()), *row))


if __name__ == "__main__":
    main()
