# A SQL word count over CSV files, with the filesystem connector and the csv format:
# https://nightlies.apache.org/flink/flink-docs-stable/docs/connectors/table/filesystem/
# https://nightlies.apache.org/flink/flink-docs-stable/docs/connectors/table/formats/csv/
# The program writes its input into a temporary directory, counts the words with an INSERT INTO a
# filesystem csv sink, then reads that sink back with SELECT and prints it.
import os
import tempfile

from pyflink.table import EnvironmentSettings, TableEnvironment

LINES = [(1, "the quick brown fox"), (2, "jumps over the lazy dog"), (3, "the dog sleeps")]


def word_count(work_dir):
    source_dir = os.path.join(work_dir, "docs")
    os.makedirs(source_dir)
    with open(os.path.join(source_dir, "part-0.csv"), "w") as f:
        f.writelines(f"{doc_id},{line}\n" for doc_id, line in LINES)

    t_env = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    t_env.get_config().set("parallelism.default", "1")
    t_env.execute_sql(f"""
        CREATE TABLE docs (
            doc_id INT,
            line STRING
        ) WITH (
            'connector' = 'filesystem',
            'path' = '{source_dir}',
            'format' = 'csv'
        )""")
    t_env.execute_sql(f"""
        CREATE TABLE word_counts (
            word STRING,
            cnt BIGINT
        ) WITH (
            'connector' = 'filesystem',
            'path' = '{os.path.join(work_dir, "counts")}',
            'format' = 'csv'
        )""")
    t_env.execute_sql("""
        INSERT INTO word_counts
        SELECT word, COUNT(*) AS cnt
        FROM docs CROSS JOIN UNNEST(SPLIT(line, ' ')) AS T(word)
        GROUP BY word""").wait()
    t_env.execute_sql("SELECT word, cnt FROM word_counts").print()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        word_count(tmp)
