"""``pyflink.datastream.async_retry_strategies``."""

from .._exports import lazy_exports

_NAMES = {
    'ExponentialBackoffDelayRetryStrategy': 'sessioncluster.api.async_io',
    'FixedDelayRetryStrategy': 'sessioncluster.api.async_io',
    'NO_RETRY_STRATEGY': 'sessioncluster.api.async_io',
    'NoRetryStrategy': 'sessioncluster.api.async_io',
    'RetryPredicate': 'sessioncluster.api.async_io',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
