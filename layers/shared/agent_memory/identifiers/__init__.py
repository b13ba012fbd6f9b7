"""The identifier firewall (docs/architecture.md, "Identifiers"): the subject identifier index
(salted digests of a project's REDCap identifier values) and the policy applied at every ingress.

The lowest feature tier: it imports only the domain, the ports and observability, and any
feature may import it.
"""

from agent_memory.identifiers.firewall import IdentifierFirewall
from agent_memory.identifiers.index import IdentifierIndex

__all__ = ["IdentifierFirewall", "IdentifierIndex"]
