# Event-time timers in a KeyedProcessFunction with ValueState, in the form of the timer example of
# Flink's "Process Function" page (a sum per key, emitted by a timer 2 s after each record):
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/datastream/operators/process_function/
from pyflink.common import WatermarkStrategy, Duration
from pyflink.common.typeinfo import Types
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class Sum(KeyedProcessFunction):

    def open(self, runtime_context: RuntimeContext):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.PICKLED_BYTE_ARRAY()))

    def process_element(self, value, ctx: 'KeyedProcessFunction.Context'):
        self.total.update((self.total.value() or 0) + value[2])
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 2000)

    def on_timer(self, timestamp: int, ctx: 'KeyedProcessFunction.OnTimerContext'):
        yield ctx.get_current_key(), timestamp, self.total.value()


class FirstField(TimestampAssigner):

    def extract_timestamp(self, value, record_timestamp: int) -> int:
        return value[0]


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)  # one source subtask: each key's records arrive in the list's order
ds = env.from_collection([(1000, 'a', 1), (2500, 'b', 10), (1500, 'a', 2), (6000, 'a', 4),
                          (3000, 'b', 20), (2500, 'b', 5)])
ds = ds.assign_timestamps_and_watermarks(
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(2))
    .with_timestamp_assigner(FirstField()))
ds.key_by(lambda v: v[1]).process(Sum()).print()
env.execute()
