"""The Powertools tracer (X-Ray), for the functions that call the LLM and the jobs.

Use ``capture_response=False`` on anything that returns prompt or reply text.
"""

from aws_lambda_powertools import Tracer

tracer = Tracer(service="agent-memory")
