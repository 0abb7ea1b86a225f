"""STREAMING mode: DataStream programs as Spark Structured Streaming queries.

``runtime`` runs in Spark's Python workers (operator chains, keyed state in the state store);
``sessioncluster.spark.streaming`` builds the queries on the JobManager;
``sessioncluster.jobmanager.streamingjob`` owns them as one job.
"""
