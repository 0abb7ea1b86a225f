# Keyed ValueState in a rich FlatMapFunction, in the form of the Python example of Flink's
# "Working with State" page (a count-window average over pairs of records):
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/datastream/fault-tolerance/state/
from pyflink.common.typeinfo import Types
from pyflink.datastream import StreamExecutionEnvironment, FlatMapFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class PairAverage(FlatMapFunction):

    def __init__(self):
        self.sum = None

    def open(self, runtime_context: RuntimeContext):
        self.sum = runtime_context.get_state(ValueStateDescriptor("average", Types.PICKLED_BYTE_ARRAY()))

    def flat_map(self, value):
        count, total = self.sum.value() or (0, 0)
        count, total = count + 1, total + value[1]
        if count >= 2:
            self.sum.clear()
            yield value[0], total // count
        else:
            self.sum.update((count, total))


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)  # one source subtask: each key's records arrive in the list's order
env.from_collection([(1, 3), (1, 5), (1, 7), (1, 4), (1, 2), (2, 10), (2, 20)]) \
    .key_by(lambda row: row[0]) \
    .flat_map(PairAverage()) \
    .print()
env.execute()
