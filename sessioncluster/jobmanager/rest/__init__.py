"""Flink's REST API, served by the JobManager on its own event loop (tornado).

Paths and JSON field names are Flink's (``rest_v1_dispatcher.yml``), so that a Flink REST client
parses them. Unknown paths and ids, and the paths of Flink's API that do not apply to this
cluster, get 404 with Flink's ``{"errors": [...]}`` body; nothing answers a stack trace.

Unlike Flink's, every request needs ``Authorization: Bearer <token>``. The token is derived from
the session key (:func:`~sessioncluster.cluster.connection.rest_token`), because any local user can reach
a loopback port. Without the token the answer is 401 and nothing else. The dashboard (``/``,
:mod:`..dashboard`) is authorised once by ``/?token=...``, which leaves the token in an HttpOnly,
SameSite=Strict cookie; a request authorised by that cookie that changes something (PATCH, POST)
must also carry ``X-Sessioncluster-Request: 1``, which no cross-site form can set.

Reads go through :class:`RestServices`, not through the JobManager: the jobs (in memory or in the
job store), the TaskManagers, the configuration, and cancel.

- :mod:`.server`: the HTTP server and the routing table;
- :mod:`.base`: the services, the token, JSON and error answers, lookups by id;
- :mod:`.handlers`: a job's paths; :mod:`.clusterhandlers`: the JobManager's and TaskManagers';
- :mod:`.payloads`, :mod:`.checkpoints`, :mod:`.cluster`, :mod:`.metrics`: Flink's bodies;
- :mod:`.sql`: the session's own paths for Flink SQL, which Flink's API has no resource for (a
  streaming SELECT's newest rows, ``/jobs/:jid/sql-result``; the catalog, ``/sql/tables``).
"""

from .base import RestServices
from .checkpoints import checkpoint_statistics
from .cluster import cluster_configuration, taskmanager_log
from .payloads import job_details_info, job_overview, job_plan
from .server import RestServer, routes

__all__ = ["RestServer", "RestServices", "checkpoint_statistics", "cluster_configuration",
           "job_details_info", "job_overview", "job_plan", "routes", "taskmanager_log"]
