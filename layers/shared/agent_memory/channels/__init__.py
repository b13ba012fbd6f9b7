"""Messenger channels of a project (docs/architecture.md, "WeCom"): the channel settings an admin
sets (:mod:`.wecom`), WeCom's callbacks onto the inbound queue, the delivery of outbound messages,
and where reminders and admin alerts go (:mod:`.notify`). A feature package: ports only, no SDK.
"""
