"""WeCom (企业微信): the callback protocol (:mod:`.crypto`, through wechatpy), the API client
(:mod:`.api`: access tokens, application messages, the group robot) and the message splitting at
WeCom's size limits (:mod:`.split`). docs/architecture.md, "WeCom".
"""
