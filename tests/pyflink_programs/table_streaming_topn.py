# Top-N (ROW_NUMBER() ... WHERE rn <= N), as Flink's "Top-N" page describes it, in STREAMING
# mode over a bounded source:
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/table/sql/queries/topn/
# Flink runs the query as a streaming job even though from_elements ends: each row that enters
# a partition's top N shifts the ranks after it. With the rank number in the output each changed
# rank is -U (the row there before) / +U (the row there now) and a rank newly filled +I; without
# it, -D of the row pushed out then +I of the new one; a top-1 per partition updates its one row
# (+U alone: the partition key is the result's key).
from pyflink.table import EnvironmentSettings, TableEnvironment

SCORES = [("a", 1), ("b", 5), ("a", 3), ("a", 2), ("b", 5), ("a", 3), ("b", 1)]


def main():
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    t_env.create_temporary_view("scores", t_env.from_elements(SCORES, ["player", "score"]))
    ranked = ("SELECT {out} FROM (SELECT player, score, ROW_NUMBER() OVER ({over}) AS rn "
              "FROM scores) WHERE {cond}")
    t_env.execute_sql(ranked.format(out="player, score, rn", cond="rn <= 2",
                                    over="PARTITION BY player ORDER BY score DESC")).print()
    t_env.execute_sql(ranked.format(out="player, score", cond="rn <= 2",
                                    over="PARTITION BY player ORDER BY score DESC")).print()
    t_env.execute_sql(ranked.format(out="player, score", cond="rn = 1",
                                    over="PARTITION BY player ORDER BY score ASC")).print()
    # a global Top-N: every row competes for the same three ranks
    t_env.execute_sql(ranked.format(out="*", cond="rn <= 3", over="ORDER BY score DESC")).print()
    # the two best totals: each total's update retracts its row and adds the new one, and the
    # ranks after it follow (-D of a rank left empty, +I of one filled)
    t_env.execute_sql("SELECT player, total, rn FROM (SELECT player, total, ROW_NUMBER() OVER "
                      "(ORDER BY total DESC) AS rn FROM (SELECT player, SUM(score) AS total "
                      "FROM scores GROUP BY player)) WHERE rn <= 2").print()

    # the same changes collected, each Row with its RowKind, and into a print table
    best = t_env.sql_query(ranked.format(out="player, score", cond="rn <= 2",
                                         over="PARTITION BY player ORDER BY score DESC"))
    with best.execute().collect() as results:
        for row in results:
            print((str(row.get_row_kind()), *row))
    t_env.execute_sql("CREATE TABLE best (player STRING, score BIGINT) "
                      "WITH ('connector' = 'print')")
    best.execute_insert("best").wait()


if __name__ == "__main__":
    main()
