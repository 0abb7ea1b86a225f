"""``pyflink.datastream.async_retry_strategies``."""

from .._exports import lazy_exports

_NAMES = {
    'ExponentialBackoffDelayRetryStrategy': 'sessioncluster.api.asyncio',
    'FixedDelayRetryStrategy': 'sessioncluster.api.asyncio',
    'NO_RETRY_STRATEGY': 'sessioncluster.api.asyncio',
    'NoRetryStrategy': 'sessioncluster.api.asyncio',
    'RetryPredicate': 'sessioncluster.api.asyncio',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
