"""``pyflink.datastream.window``."""

from .._exports import lazy_exports

_NAMES = {
    'ContinuousEventTimeTrigger': 'sessioncluster.window',
    'ContinuousProcessingTimeTrigger': 'sessioncluster.window',
    'CountSlidingWindowAssigner': 'sessioncluster.window',
    'CountTrigger': 'sessioncluster.window',
    'CountTumblingWindowAssigner': 'sessioncluster.window',
    'CountWindow': 'sessioncluster.window',
    'DynamicEventTimeSessionWindows': 'sessioncluster.window',
    'DynamicProcessingTimeSessionWindows': 'sessioncluster.window',
    'EventTimeSessionWindows': 'sessioncluster.window',
    'EventTimeTrigger': 'sessioncluster.window',
    'GlobalWindow': 'sessioncluster.window',
    'GlobalWindows': 'sessioncluster.window',
    'MergingWindowAssigner': 'sessioncluster.window',
    'NeverTrigger': 'sessioncluster.window',
    'ProcessingTimeSessionWindows': 'sessioncluster.window',
    'ProcessingTimeTrigger': 'sessioncluster.window',
    'PurgingTrigger': 'sessioncluster.window',
    'SessionWindowTimeGapExtractor': 'sessioncluster.window',
    'SlidingEventTimeWindows': 'sessioncluster.window',
    'SlidingProcessingTimeWindows': 'sessioncluster.window',
    'Time': 'sessioncluster.common.time',
    'TimeWindow': 'sessioncluster.window',
    'Trigger': 'sessioncluster.window',
    'TriggerResult': 'sessioncluster.window',
    'TumblingEventTimeWindows': 'sessioncluster.window',
    'TumblingProcessingTimeWindows': 'sessioncluster.window',
    'Window': 'sessioncluster.window',
    'WindowAssigner': 'sessioncluster.window',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
