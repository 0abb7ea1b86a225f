"""``pyflink.datastream.async_retry_predicates``."""

from .._exports import lazy_exports

_NAMES = {
    'empty_result_predicate': 'sessioncluster.api.async_io',
    'exception_type_predicate': 'sessioncluster.api.async_io',
    'has_exception_predicate': 'sessioncluster.api.async_io',
}

__all__ = sorted(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _NAMES)
