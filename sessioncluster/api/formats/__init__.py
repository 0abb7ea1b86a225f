"""PyFlink's ``pyflink.datastream.formats``: CSV, JSON, Parquet, Avro and ORC records, read by a
FileSource and written by a FileSink's bulk format (``BulkWriterFactory``)."""
