# The same word count without type information (PyFlink then pickles records), in the form of PyFlink's DataStream tutorial:
# https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/python/datastream_tutorial/
# (--input: a text file read by a FileSource; --output: a FileSink directory, else print()).
import argparse
import logging
import sys

from pyflink.common import WatermarkStrategy, Encoder, Types
from pyflink.datastream import StreamExecutionEnvironment, RuntimeExecutionMode
from pyflink.datastream.connectors.file_system import (FileSource, StreamFormat, FileSink,
                                                       OutputFileConfig, RollingPolicy)

DEFAULT_LINES = ["the quick brown fox", "jumps over the lazy dog", "the dog sleeps"]


def word_count(input_path, output_path):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(1)

    if input_path is not None:
        source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), input_path) \
            .process_static_file_set().build()
        ds = env.from_source(source=source,
                             watermark_strategy=WatermarkStrategy.for_monotonous_timestamps(),
                             source_name="file_source")
    else:
        print("Executing word_count example with default input data set.")
        ds = env.from_collection(DEFAULT_LINES)

    def split(line):
        yield from line.split()

    ds = ds.flat_map(split) \
        .map(lambda w: (w, 1)) \
        .key_by(lambda t: t[0]) \
        .reduce(lambda a, b: (a[0], a[1] + b[1]))

    if output_path is not None:
        ds.sink_to(
            sink=FileSink.for_row_format(base_path=output_path,
                                         encoder=Encoder.simple_string_encoder())
            .with_output_file_config(OutputFileConfig.builder()
                                     .with_part_prefix("prefix")
                                     .with_part_suffix(".ext")
                                     .build())
            .with_rolling_policy(RollingPolicy.default_rolling_policy())
            .build())
    else:
        ds.print()

    env.execute()


if __name__ == '__main__':
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser()
    parser.add_argument('--input', dest='input', required=False, help='Input file to process.')
    parser.add_argument('--output', dest='output', required=False, help='Output directory.')
    known_args, _ = parser.parse_known_args(sys.argv[1:])
    word_count(known_args.input, known_args.output)
