"""`make eval`: quality figures of the memory pipeline on labelled data (distillation month, routing
scenarios, symptom extraction). Not shipped in the Lambda layer."""
