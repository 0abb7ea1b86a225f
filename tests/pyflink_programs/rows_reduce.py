# A ROW_NAMED collection read by field name, then a running reduce per key, in the form of
# PyFlink's DataStream API page (the "key_by" and "reduce" transformations, the Row type):
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/python/datastream/operators/overview/
# No runtime mode is set: Flink's default, STREAMING, emits every update of the reduce.
import json

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment


def total_per_city():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    orders = env.from_collection(
        [(1, '{"city": "Oslo", "amount": 5}'),
         (2, '{"city": "Lima", "amount": 7}'),
         (3, '{"city": "Oslo", "amount": 4}'),
         (4, '{"city": "Oslo", "amount": 1}')],
        type_info=Types.ROW_NAMED(["id", "order"], [Types.INT(), Types.STRING()]))
    orders.map(lambda row: (json.loads(row.order)["city"], json.loads(row.order)["amount"]),
               output_type=Types.TUPLE([Types.STRING(), Types.INT()])) \
          .key_by(lambda t: t[0]) \
          .reduce(lambda a, b: (a[0], a[1] + b[1])) \
          .print()
    env.execute()


if __name__ == '__main__':
    total_per_city()
