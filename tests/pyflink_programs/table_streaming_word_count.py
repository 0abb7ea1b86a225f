# A streaming word count from the datagen connector, as PyFlink's Table API examples and the
# "DataGen" connector page: https://nightlies.apache.org/flink/flink-docs-stable/docs/connectors/table/datagen/
# number-of-rows bounds the source, so the STREAMING job ends after its 30 rows; the counts
# are an updating (changelog) result, read with to_pandas(), which applies the changelog.
from pyflink.table import EnvironmentSettings, TableEnvironment
from pyflink.table.expressions import col


def main():
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    t_env.execute_sql("""
        CREATE TABLE numbers (
            id BIGINT
        ) WITH (
            'connector' = 'datagen',
            'number-of-rows' = '30',
            'fields.id.kind' = 'sequence',
            'fields.id.start' = '1',
            'fields.id.end' = '30'
        )""")
    words = t_env.sql_query("""
        SELECT CASE MOD(id, 3) WHEN 0 THEN 'flink' WHEN 1 THEN 'table' ELSE 'stream' END
               AS word
        FROM numbers WHERE MOD(id, 5) <> 0""")
    counts = words.group_by(col("word")).select(col("word"), col("word").count.alias("cnt"))
    for word, cnt in sorted(counts.to_pandas().itertuples(index=False)):
        print((word, int(cnt)))


if __name__ == "__main__":
    main()
