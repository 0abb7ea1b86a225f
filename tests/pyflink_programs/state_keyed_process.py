# Keyed ValueState in a KeyedProcessFunction (a running count per key), in the form of the
# Python examples of PyFlink's state page:
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/python/datastream/state/
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class RunningCount(KeyedProcessFunction):

    def open(self, runtime_context: RuntimeContext):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx: 'KeyedProcessFunction.Context'):
        n = (self.count.value() or 0) + 1
        self.count.update(n)
        yield ctx.get_current_key(), value[1], n


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)  # one source subtask: each key's records arrive in the list's order
env.from_collection([("a", "x"), ("b", "y"), ("a", "z"), ("a", "w")]) \
    .key_by(lambda v: v[0]) \
    .process(RunningCount()) \
    .print()
env.execute()
