"""The inbound event handling of the functions that serve no HTTP route: the job worker (SQS
batches of job requests, THE job table), the job dispatcher (EventBridge Scheduler's input) and
the reminder function (one schedule firing). The same layer as ``agent_memory.http``: above the
feature packages, below ``agent_memory.wiring``, which builds each handler's collaborators.

Each module has the function's collaborators (a dataclass wiring builds) and an event handler
object whose ``resolve(event, context)`` the function's handler module calls, as the HTTP
functions call their resolver's.
"""
