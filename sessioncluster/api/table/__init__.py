"""PyFlink's Table API types (``pyflink.table.types``)."""
