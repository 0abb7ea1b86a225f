# Tumbling event-time windows fired early by a ContinuousEventTimeTrigger, in the form of Flink's
# "Windows" page (Triggers) and PyFlink's windowing examples:
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/datastream/operators/windows/#triggers
from typing import Iterable

from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import ProcessWindowFunction, StreamExecutionEnvironment
from pyflink.datastream.window import ContinuousEventTimeTrigger, TimeWindow, TumblingEventTimeWindows


class SecondField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return int(value[1])


class CountPerWindow(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
    def process(self, key: str, context: ProcessWindowFunction.Context[TimeWindow],
                elements: Iterable[tuple]) -> Iterable[tuple]:
        return [(key, context.window().start, context.window().end, len(list(elements)))]


if __name__ == '__main__':
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    events = env.from_collection([('a', 1), ('a', 2), ('a', 6), ('a', 12)],
                                 type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    events.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(SecondField())) \
        .key_by(lambda e: e[0], key_type=Types.STRING()) \
        .window(TumblingEventTimeWindows.of(Time.milliseconds(10))) \
        .trigger(ContinuousEventTimeTrigger.of(Time.milliseconds(5))) \
        .process(CountPerWindow(), Types.TUPLE([Types.STRING(), Types.INT(), Types.INT(), Types.INT()])) \
        .print()
    env.execute()
