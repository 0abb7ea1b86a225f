# Event time from a DataStream into a Table, as PyFlink's "Conversions between PyFlink Table and
# DataStream" page (from_data_stream with a Schema): https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/python/table/conversion_of_data_stream/
# and Flink's "Handling of Event-Time and Watermarks" for from_data_stream. The clicks' record
# timestamps (assigned by a WatermarkStrategy) become the Table's rowtime column (a metadata
# column, SOURCE_WATERMARK()); a second Table computes its rowtime from a field with
# TO_TIMESTAMP_LTZ and its own watermark. Both are counted in 10-second tumbling windows, in
# BATCH and then in STREAMING.
from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.table import EnvironmentSettings, Schema, StreamTableEnvironment

# (user, event time in epoch milliseconds)
CLICKS = [("alice", 1000), ("bob", 4000), ("alice", 9000), ("bob", 12000),
          ("alice", 15000), ("john", 21000)]


class ClickTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def main():
    for mode, settings in ((RuntimeExecutionMode.BATCH, EnvironmentSettings.in_batch_mode()),
                           (RuntimeExecutionMode.STREAMING, EnvironmentSettings.in_streaming_mode())):
        count_windows(mode, settings)


def count_windows(mode, settings):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(mode)
    env.set_parallelism(1)
    t_env = StreamTableEnvironment.create(env, settings)
    t_env.get_config().set("table.local-time-zone", "UTC")

    clicks = env.from_collection(CLICKS, type_info=Types.TUPLE([Types.STRING(), Types.LONG()]))
    clicks = clicks.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(1))
        .with_timestamp_assigner(ClickTime()))

    # the record timestamps as the rowtime
    by_timestamp = t_env.from_data_stream(
        clicks,
        Schema.new_builder()
        .column_by_metadata("rowtime", "TIMESTAMP_LTZ(3)")
        .watermark("rowtime", "SOURCE_WATERMARK()")
        .build())
    t_env.create_temporary_view("clicks", by_timestamp)
    t_env.sql_query(
        "SELECT window_start, window_end, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE clicks, "
        "DESCRIPTOR(rowtime), INTERVAL '10' SECOND)) GROUP BY window_start, window_end"
    ).execute().print()

    # a rowtime computed from a field, with a watermark of its own
    by_field = t_env.from_data_stream(
        clicks,
        Schema.new_builder()
        .column_by_expression("ts", "TO_TIMESTAMP_LTZ(f1, 3)")
        .watermark("ts", "ts - INTERVAL '1' SECOND")
        .build())
    t_env.create_temporary_view("clicks_by_field", by_field)
    t_env.sql_query(
        "SELECT f0 AS name, window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE "
        "clicks_by_field, DESCRIPTOR(ts), INTERVAL '10' SECOND)) "
        "GROUP BY f0, window_start, window_end"
    ).execute().print()


if __name__ == "__main__":
    main()
