"""actoviq.dbos: durable agent runs, approvals and background children on DBOS.

DBOS (``pip install dbos``) is a durable-execution library that checkpoints workflows and their
steps to SQLite or PostgreSQL. Here an agent run is a DBOS workflow whose steps are its model
calls and tool calls: a crashed run recovers in another process without calling a model or a
tool twice, and an approval can be given from any process.
"""

from actoviq.dbos.approvals import approve, decide, pending, reject
from actoviq.dbos.engine import (
    CHILD_WORKFLOW_NAME,
    DEFAULT_CHILD_QUEUE,
    DbosBackgroundEngine,
    DbosQueueSettings,
    dbos_engine,
)
from actoviq.dbos.errors import (
    DbosConfigurationError,
    DbosError,
    DbosRunNotFoundError,
    DbosRuntimeNotRegisteredError,
    DurableDecisionError,
)
from actoviq.dbos.events import DbosEventStream, read_events
from actoviq.dbos.models import MODEL_STEP_NAME, DurableModelProvider, durable_models
from actoviq.dbos.names import (
    DECISION_TOPIC_PREFIX,
    EVENTS_STREAM_KEY,
    PENDING_EVENT_KEY,
    RUN_WORKFLOW_NAME,
    WAITING_EVENT_PREFIX,
    decision_key,
    decision_topic,
    waiting_event_key,
)
from actoviq.dbos.runtime import (
    DEFAULT_DECISION_TIMEOUT_SECONDS,
    DbosRuntime,
    DurableRun,
    durable_run,
    retrieve_run,
    run_result_json,
)
from actoviq.dbos.tools import (
    TOOL_START_STEP_NAME,
    TOOL_STEP_PREFIX,
    DurableToolExecute,
    StepRetry,
    durable_tools,
)

__all__ = [
    "CHILD_WORKFLOW_NAME",
    "DECISION_TOPIC_PREFIX",
    "DEFAULT_CHILD_QUEUE",
    "DEFAULT_DECISION_TIMEOUT_SECONDS",
    "EVENTS_STREAM_KEY",
    "MODEL_STEP_NAME",
    "PENDING_EVENT_KEY",
    "RUN_WORKFLOW_NAME",
    "TOOL_START_STEP_NAME",
    "TOOL_STEP_PREFIX",
    "WAITING_EVENT_PREFIX",
    "DbosBackgroundEngine",
    "DbosConfigurationError",
    "DbosError",
    "DbosEventStream",
    "DbosQueueSettings",
    "DbosRunNotFoundError",
    "DbosRuntime",
    "DbosRuntimeNotRegisteredError",
    "DurableDecisionError",
    "DurableModelProvider",
    "DurableRun",
    "DurableToolExecute",
    "StepRetry",
    "approve",
    "dbos_engine",
    "decide",
    "decision_key",
    "decision_topic",
    "durable_models",
    "durable_run",
    "durable_tools",
    "pending",
    "read_events",
    "reject",
    "retrieve_run",
    "run_result_json",
    "waiting_event_key",
]
