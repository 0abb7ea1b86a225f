# Mixing the DataStream API and the Table API, as PyFlink's "Conversions between PyFlink Table
# and DataStream" page: https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/python/table/conversion_of_data_stream/
# A DataStream of named Rows becomes a Table (from_data_stream), is queried with SQL through a
# temporary view, and the (insert-only) result goes back into the DataStream API
# (to_data_stream), where a map into tuples and print() finish the job.
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.table import StreamTableEnvironment

SCORES = [("alice", 12), ("bob", 10), ("alice", 100), ("john", 3), ("bob", 7)]


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    t_env = StreamTableEnvironment.create(env)

    ds = env.from_collection(SCORES, type_info=Types.ROW_NAMED(
        ["name", "score"], [Types.STRING(), Types.INT()]))
    table = t_env.from_data_stream(ds)
    t_env.create_temporary_view("scores", table)
    result = t_env.sql_query(
        "SELECT UPPER(name) AS name, score * 10 AS points FROM scores WHERE score > 5")

    res_ds = t_env.to_data_stream(result)
    res_ds.map(lambda r: (r[0], r[1] + 1),
               output_type=Types.TUPLE([Types.STRING(), Types.INT()])).print()
    env.execute()


if __name__ == "__main__":
    main()
