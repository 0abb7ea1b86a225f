"""``pyflink.datastream.window``."""

from .._exports import lazy_exports

_NAMES = {
    'ContinuousEventTimeTrigger': 'sessioncluster.api.window',
    'ContinuousProcessingTimeTrigger': 'sessioncluster.api.window',
    'CountSlidingWindowAssigner': 'sessioncluster.api.window',
    'CountTrigger': 'sessioncluster.api.window',
    'CountTumblingWindowAssigner': 'sessioncluster.api.window',
    'CountWindow': 'sessioncluster.api.window',
    'DynamicEventTimeSessionWindows': 'sessioncluster.api.window',
    'DynamicProcessingTimeSessionWindows': 'sessioncluster.api.window',
    'EventTimeSessionWindows': 'sessioncluster.api.window',
    'EventTimeTrigger': 'sessioncluster.api.window',
    'GlobalWindow': 'sessioncluster.api.window',
    'GlobalWindows': 'sessioncluster.api.window',
    'MergingWindowAssigner': 'sessioncluster.api.window',
    'NeverTrigger': 'sessioncluster.api.window',
    'ProcessingTimeSessionWindows': 'sessioncluster.api.window',
    'ProcessingTimeTrigger': 'sessioncluster.api.window',
    'PurgingTrigger': 'sessioncluster.api.window',
    'SessionWindowTimeGapExtractor': 'sessioncluster.api.window',
    'SlidingEventTimeWindows': 'sessioncluster.api.window',
    'SlidingProcessingTimeWindows': 'sessioncluster.api.window',
    'Time': 'sessioncluster.common.time',
    'TimeWindow': 'sessioncluster.api.window',
    'Trigger': 'sessioncluster.api.window',
    'TriggerResult': 'sessioncluster.api.window',
    'TumblingEventTimeWindows': 'sessioncluster.api.window',
    'TumblingProcessingTimeWindows': 'sessioncluster.api.window',
    'Window': 'sessioncluster.api.window',
    'WindowAssigner': 'sessioncluster.api.window',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
