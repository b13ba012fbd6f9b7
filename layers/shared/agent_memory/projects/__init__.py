"""Projects and their members: onboarding a team through the API (create a project, add the
first admin, add and remove members) and who may do it (``agent_memory.http.routes``)."""
