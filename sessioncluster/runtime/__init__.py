"""The operator runtime, one for BATCH and STREAMING (Flink's StreamOperator and its services).

- ``operators``: the operators (process, keyed, co, window, watermarks), each with Flink's
  per-element interface;
- ``output.Output``: an operator's output collector (main and side outputs);
- ``state_backend.KeyedStateBackend``: keyed state, snapshot and restore per key;
- ``timers.InternalTimerService``: timers per key;
- ``batch_driver`` / ``streaming_driver``: the two ways the operators are driven;
- ``chain``: a vertex's operator chain as iterators.

The runtime imports the user API (functions, state descriptors, windows), never the other way.
"""
