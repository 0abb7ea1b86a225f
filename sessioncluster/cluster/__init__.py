"""What the client and the JobManager (and the TaskManagers) share, below both: a session's
connection file and directory (``connection``, ``files``), finding its leader under high
availability (``leader``, HA's read side), the blob store (``blobstore``) and an application
cluster's status on disk (``appstatus``). It imports only ``protocol`` and ``lru`` of this
package."""
