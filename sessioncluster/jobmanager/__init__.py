"""The JobManager process: Dispatcher, ResourceManager, JobMasters, BlobServer, Spark driver."""
