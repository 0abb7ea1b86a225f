# The changelog a streaming group aggregation emits over a bounded source when its input comes
# through Python functions (PyFlink's "Intro to the Python Table API", "Table Functions" and
# "Row-based Operations" pages):
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/python/table/udfs/python_udfs/
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/python/table/operations/row_based_operations/
# A table function's rows come in the order of the rows they are made of, each row's rows in
# the order the function yields them; a scalar function (in a GROUP BY key, or a Table API
# map()) keeps the rows' order: each word's count is +I first, then -U/+U for each further one.
from pyflink.common import Row
from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment
from pyflink.table.expressions import col, lit
from pyflink.table.udf import udf, udtf

LINES = ["to be or not", "to be that is", "the question to be"]


@udtf(result_types=[DataTypes.STRING()])
def split(line: str):
    for word in line.split():
        yield word


@udf(result_type=DataTypes.STRING())
def first_letter(word: str) -> str:
    return word[0]


@udf(result_type=DataTypes.ROW([DataTypes.FIELD("first", DataTypes.STRING()),
                                DataTypes.FIELD("size", DataTypes.INT())]))
def first_and_size(word: Row) -> Row:
    return Row(word[0][0], len(word[0]))


def main():
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", "1")
    t_env.create_temporary_system_function("split", split)
    t_env.create_temporary_system_function("first_letter", first_letter)
    lines = t_env.from_elements([(line,) for line in LINES], ["line"])
    t_env.create_temporary_view("lines", lines)

    # a SQL GROUP BY over LATERAL TABLE(split(line))
    t_env.execute_sql("SELECT word, COUNT(*) AS cnt FROM lines, LATERAL TABLE(split(line)) "
                      "AS T(word) GROUP BY word").print()

    words = t_env.sql_query("SELECT word FROM lines, LATERAL TABLE(split(line)) AS T(word)")
    t_env.create_temporary_view("words", words)
    # a GROUP BY key computed by a Python scalar function
    t_env.execute_sql("SELECT first_letter(word) AS i, COUNT(*) AS cnt, MAX(word) AS last_word "
                      "FROM words GROUP BY first_letter(word)").print()

    # a Table API map() before the aggregation
    words.map(first_and_size).alias("first", "size") \
        .group_by(col("first")) \
        .select(col("first"), lit(1).count.alias("cnt"), col("size").sum.alias("letters")) \
        .execute().print()


if __name__ == "__main__":
    main()
