"""Background memory jobs: daily distillation,
weekly archiving, pruning. Fanned out per project through SQS; every job is idempotent.

Contract between the fan-out (the job worker, ``agent_memory.events.jobs``) and the job logic:

- :class:`JobRequest` is the SQS message body (one project, one job, one date).
- ``agent_memory.jobs.runner.run_job(deps, request, job) -> JobReport`` runs one job (the one the
  worker's job table names for ``request.job``) for one project and is safe to run again (a
  duplicate delivery or a re-run changes nothing).
"""
