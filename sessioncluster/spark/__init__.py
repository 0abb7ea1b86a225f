"""The Spark side: the driver (SparkSession, listener bridge) and JobGraph translation."""
