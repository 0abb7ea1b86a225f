# Top-N over a group aggregation ordered by a COUNT or a MAX, and MAX/MIN over a changelog, in
# STREAMING mode over a bounded source, as Flink's "Top-N" page describes it:
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/table/sql/queries/topn/
# A count (or a maximum) only grows, so Flink's planner keeps just the top N words and updates
# a word in place (UpdatableTopNFunction): with rn, its old rank -U and the ranks it moves over
# -U/+U; without rn, -U/+U of the word, -D of the word pushed out then +I. MAX/MIN of the counts
# retract a word's old count (MaxWithRetract/MinWithRetract) and emit only when they change.
from pyflink.table import EnvironmentSettings, TableEnvironment

CLICKS = [("x", "p", 4), ("y", "q", 2), ("x", "p", 1), ("z", "p", 7), ("y", "q", 3),
          ("z", "q", 1), ("w", "p", 2), ("y", "p", 9), ("w", "q", 5), ("z", "p", 2)]


def main():
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    t_env.create_temporary_view("clicks", t_env.from_elements(CLICKS, ["word", "page", "ms"]))
    t_env.create_temporary_view("counts", t_env.sql_query(
        "SELECT page, word, COUNT(*) AS cnt, MAX(ms) AS slowest FROM clicks GROUP BY page, word"))
    t_env.create_temporary_view("per_word", t_env.sql_query(
        "SELECT word, COUNT(*) AS cnt, MAX(ms) AS slowest FROM clicks GROUP BY word"))
    top = "SELECT {out} FROM (SELECT *, ROW_NUMBER() OVER ({over}) AS rn FROM {t}) WHERE rn <= {n}"
    # the two most clicked words
    t_env.execute_sql(top.format(out="word, cnt, rn", over="ORDER BY cnt DESC", t="per_word",
                                 n=2)).print()
    t_env.execute_sql(top.format(out="word, cnt", over="ORDER BY cnt DESC", t="per_word",
                                 n=2)).print()
    # per page, and the slowest click's word
    t_env.execute_sql(top.format(out="page, word, cnt, rn", t="counts", n=2,
                                 over="PARTITION BY page ORDER BY cnt DESC")).print()
    t_env.execute_sql(top.format(out="page, word, cnt", t="counts", n=1,
                                 over="PARTITION BY page ORDER BY cnt DESC")).print()
    t_env.execute_sql(top.format(out="word, slowest, rn", over="ORDER BY slowest DESC",
                                 t="per_word", n=2)).print()
    # the most and fewest clicks of a word, overall and per page
    t_env.execute_sql("SELECT MAX(cnt) AS most, MIN(cnt) AS fewest FROM per_word").print()
    t_env.execute_sql("SELECT page, MAX(cnt) AS most, MIN(cnt) AS fewest FROM counts "
                      "GROUP BY page").print()


if __name__ == "__main__":
    main()
