"""Background memory jobs: daily distillation,
weekly archiving, pruning. Fanned out per project through SQS; every job is idempotent.

Contract between the fan-out (functions/jobs/*) and the job logic:

- :class:`JobRequest` is the SQS message body (one project, one job, one date).
- ``agent_memory.jobs.runner.run_job(deps, request) -> JobReport`` runs one job for one
  project and is safe to run again (a duplicate delivery or a re-run changes nothing).
"""
