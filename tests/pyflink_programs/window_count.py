# Tumbling count windows with a reduce, in the form of Flink's "Windows" page (Global Windows with
# a count trigger: KeyedStream.count_window) and PyFlink's count window example:
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/datastream/operators/windows/#global-windows
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection([('a', 1), ('a', 2), ('b', 10), ('a', 3), ('b', 20), ('a', 4), ('a', 5),
                     ('b', 30)],
                    type_info=Types.TUPLE([Types.STRING(), Types.INT()])) \
    .key_by(lambda x: x[0], key_type=Types.STRING()) \
    .count_window(2) \
    .reduce(lambda a, b: (a[0], a[1] + b[1]), output_type=Types.TUPLE([Types.STRING(), Types.INT()])) \
    .print()
env.execute()
