# Sliding event-time windows (size 10 ms, slide 5 ms) with a ProcessWindowFunction, in the form of Flink's "Windows" page
# (Sliding Windows) and PyFlink's windowing examples:
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/datastream/operators/windows/#sliding-windows
from typing import Iterable

from pyflink.common import Types, WatermarkStrategy, Time
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment, ProcessWindowFunction
from pyflink.datastream.window import SlidingEventTimeWindows, TimeWindow


class SecondField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return int(value[1])


class CountPerWindow(ProcessWindowFunction):
    def process(self, key: str, context: ProcessWindowFunction.Context,
                elements: Iterable[tuple]) -> Iterable[tuple]:
        return [(key, context.window().start, context.window().end, len([e for e in elements]))]


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
ds = env.from_collection([('a', 1), ('a', 3), ('b', 4), ('a', 6), ('a', 11), ('b', 12)],
                         type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
ds.assign_timestamps_and_watermarks(
    WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(SecondField())) \
    .key_by(lambda x: x[0], key_type=Types.STRING()) \
    .window(SlidingEventTimeWindows.of(Time.milliseconds(10), Time.milliseconds(5))) \
    .process(CountPerWindow(), Types.TUPLE([Types.STRING(), Types.INT(), Types.INT(), Types.INT()])) \
    .print()
env.execute()
